package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// AuditReport compares a window of the journal with the store.
type AuditReport struct {
	// Journaled counts the window's journal entries: each was
	// acknowledged to its submitter.
	Journaled int
	// Decided counts those with an outcome in the store; Missing those
	// without (they are decided when a server runs, or by a replay).
	Decided, Missing int
	// Statuses counts the outcomes by status.
	Statuses map[string]int
	// IDMismatch counts outcomes whose entry id is not the journal's.
	IDMismatch int
	// MissingSamples are the first entries without an outcome.
	MissingSamples []journal.Entry
	// WithoutEvent are entries a decision made whose first event is
	// missing (the outbox rule), of the window's form, site or every form
	// — whatever their time; WithoutEventMore says there are more than
	// listed.
	WithoutEvent     []store.EntryRef
	WithoutEventMore bool
	// Places are, for each form of the window whose options have places
	// of their own, every option's entries counted one by one beside its
	// counter and capacity (a counter not the count, or more entries
	// holding an option's place than it has, is not OK).
	Places []FormPlaces
	Done   bool
}

// FormPlaces is one form's options as the audit counted them.
type FormPlaces struct {
	Form    string
	Options []store.PlaceCount
}

// PlacesOK says every option's counter is its entries and none holds more
// entries than its places.
func (r AuditReport) PlacesOK() bool {
	for _, f := range r.Places {
		for _, c := range f.Options {
			if c.Drifted() || c.Over() {
				return false
			}
		}
	}
	return true
}

// Keys lists the statuses counted, by name.
func (r AuditReport) Keys() []string { return slices.Sorted(maps.Keys(r.Statuses)) }

// OK says nothing is missing: every journal entry has its outcome and
// every entry its first event.
func (r AuditReport) OK() bool {
	return r.Done && r.Missing == 0 && len(r.WithoutEvent) == 0 && r.IDMismatch == 0 && r.PlacesOK()
}

// Samples bound what an audit lists.
const (
	maxSamples       = 20
	maxWithoutEvent  = 20
	siteScanForEvent = 1000
)

// Audit checks a window of the journal against the store; progress, when
// set, sees the report as it grows (every few hundred entries).
func Audit(ctx context.Context, j Journal, st Store, f journal.Filter, progress func(AuditReport)) (AuditReport, error) {
	r := AuditReport{Statuses: map[string]int{}}
	forms := map[string]bool{}
	report := func() {
		if progress != nil {
			c := r
			c.Statuses = maps.Clone(r.Statuses)
			c.MissingSamples = slices.Clone(r.MissingSamples)
			progress(c)
		}
	}
	err := j.Read(ctx, f, func(e journal.Entry) error {
		r.Journaled++
		forms[e.Form] = true
		o, ok, err := st.Outcome(ctx, e.Form, e.Key)
		if err != nil {
			return fmt.Errorf("read outcome of %s/%s: %w", e.Form, e.Key, err)
		}
		if !ok {
			r.Missing++
			if len(r.MissingSamples) < maxSamples {
				r.MissingSamples = append(r.MissingSamples, e)
			}
		} else {
			r.Decided++
			r.Statuses[o.Status]++
			if o.ID != e.ID {
				r.IDMismatch++
			}
		}
		if r.Journaled%512 == 0 {
			report()
		}
		return ctx.Err()
	})
	if err != nil {
		report()
		return r, fmt.Errorf("audit: stopped after %d entries: %w", r.Journaled, err)
	}
	// The outbox rule, for the window's form (or every form, filtered by
	// site when the window names one).
	limit := maxWithoutEvent + 1
	if f.Form == "" && f.Site != "" {
		limit = siteScanForEvent
	}
	refs, err := st.EntriesWithoutEvent(ctx, f.Form, limit)
	if err != nil {
		return r, fmt.Errorf("audit: %w", err)
	}
	for _, ref := range refs {
		if f.Site != "" && ref.Site != f.Site {
			continue
		}
		if len(r.WithoutEvent) == maxWithoutEvent {
			r.WithoutEventMore = true
			break
		}
		r.WithoutEvent = append(r.WithoutEvent, ref)
	}
	if f.Form != "" {
		forms[f.Form] = true
	}
	for _, form := range slices.Sorted(maps.Keys(forms)) {
		cs, err := st.CountPlaces(ctx, form)
		if err != nil {
			return r, fmt.Errorf("audit: %w", err)
		}
		if len(cs) > 0 {
			r.Places = append(r.Places, FormPlaces{Form: form, Options: cs})
		}
	}
	r.Done = true
	report()
	return r, nil
}
