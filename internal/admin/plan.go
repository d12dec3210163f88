package admin

import (
	"context"
	"fmt"
	"strings"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// PlanStore is what planning a change of definitions reads: the forms as
// stored, and the entries they hold.
type PlanStore interface {
	Forms(ctx context.Context, after int64) ([]form.Record, int64, error)
	entryReader
}

// entryReader is how a plan finds out whether a form's entries hold data.
type entryReader interface {
	CountByStatus(ctx context.Context, form string) (store.StatusCounts, error)
	SearchEntries(ctx context.Context, q store.EntryQuery, needles [][]byte, maxScan int) ([]store.Row, store.Cursor, error)
}

// Plan is what applying a set of definitions would change, form by form,
// and the changes that can lose or reshape data already collected:
// removing a field entries hold values of, or changing unique or capacity
// of a form that has entries. Those wait for the owner to confirm
// (formd forms apply --yes, the console's confirm step).
type Plan struct {
	Changes []form.Change
	// Risks are the changes that need confirming.
	Risks []Risk
}

// Risk is a change that reaches data already collected: a removed field
// (Field) that entries hold values of, or a changed setting (Setting,
// unique or capacity, from Old to New) of a form with Entries entries.
type Risk struct {
	Form, Field, Setting, Old, New string
	Entries                        int64
}

func (r Risk) String() string {
	if r.Field != "" {
		return fmt.Sprintf("form %s: removes field %s, which entries hold values of (exports keep them as a removed column)", r.Form, r.Field)
	}
	return fmt.Sprintf("form %s: changes %s (%s → %s) of a form with %d entries", r.Form, r.Setting, r.Old, r.New, r.Entries)
}

// PlanApply compares each form of set with the one stored under its id.
func PlanApply(ctx context.Context, st PlanStore, set form.Set) (Plan, error) {
	recs, _, err := st.Forms(ctx, 0)
	if err != nil {
		return Plan{}, fmt.Errorf("plan: read forms: %w", err)
	}
	stored := map[string]*form.Form{}
	for _, rec := range recs {
		if strings.HasPrefix(rec.ID, "@") {
			continue // a site's settings
		}
		if fs, err := form.Parse(rec.Source, ""); err == nil && len(fs) == 1 {
			stored[rec.ID] = fs[0]
		}
	}
	return planAgainst(ctx, st, set, func(id string) *form.Form { return stored[id] })
}

// PlanAgainst is PlanApply comparing with the forms a server has loaded
// (the console, whose registry holds them compiled).
func (h *Handler) PlanAgainst(ctx context.Context, set form.Set) (Plan, error) {
	return planAgainst(ctx, h.Store, set, h.Forms.Get)
}

func planAgainst(ctx context.Context, st entryReader, set form.Set, current func(string) *form.Form) (Plan, error) {
	var p Plan
	for _, next := range set.Forms {
		old := current(next.ID())
		c := form.Compare(old, next)
		p.Changes = append(p.Changes, c)
		if old == nil || c.Empty() {
			continue
		}
		counts, err := st.CountByStatus(ctx, next.ID())
		if err != nil {
			return Plan{}, fmt.Errorf("plan: count entries of %s: %w", next.ID(), err)
		}
		var entries int64
		for _, n := range counts {
			entries += n
		}
		if entries == 0 {
			continue
		}
		for _, name := range c.Removed {
			held, err := holdsField(ctx, st, next.ID(), name)
			if err != nil {
				return Plan{}, err
			}
			if held {
				p.Risks = append(p.Risks, Risk{Form: next.ID(), Field: name, Entries: entries})
			}
		}
		for _, s := range c.Settings {
			if s.Setting == "unique" || s.Setting == "capacity" {
				p.Risks = append(p.Risks, Risk{Form: next.ID(), Setting: s.Setting, Old: s.Old, New: s.New, Entries: entries})
			}
		}
	}
	return p, nil
}

// holdsField says some entry of the form holds a value of the field: its
// data has the field's name as a key (a key is `"name":` in the stored
// JSON; inside a value the quotes would be escaped). It reads the form's
// entries a bounded stretch at a time until one is found.
func holdsField(ctx context.Context, st entryReader, formID, name string) (bool, error) {
	needle := append(form.JSONString(name), ':')
	q := store.EntryQuery{Form: formID, Limit: 1}
	for {
		rows, next, err := st.SearchEntries(ctx, q, [][]byte{needle}, store.MaxSearchScan)
		if err != nil {
			return false, fmt.Errorf("plan: look for values of %s.%s: %w", formID, name, err)
		}
		if len(rows) > 0 {
			return true, nil
		}
		if next == (store.Cursor{}) {
			return false, nil
		}
		q.Before = next
	}
}
