// Package replay decides journal entries again and audits the store
// against the journal: the command line's formd replay and formd audit,
// and the console's Replay and Proof pages.
//
// Replay is idempotent, because the store decides each (form, key) once:
// an entry already decided is decided again as a replay, changing
// nothing; one the store lacks is restored. A
// dry run only looks: it says, for the same window, what a run would
// restore. Audit compares every journal entry of a window with the store's
// outcomes, and checks the outbox rule: every entry a decision made has
// its first event.
package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Journal is the part of the journal replay and audit read.
type Journal interface {
	Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error
}

// Store is the part of the store replay and audit read.
type Store interface {
	Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error)
	ForgetDeadLetter(ctx context.Context, form, key string) (bool, error)
	EntriesWithoutEvent(ctx context.Context, form string, limit int) ([]store.EntryRef, error)
	CountPlaces(ctx context.Context, form string) ([]store.PlaceCount, error)
}

// Processor decides a batch of entries (processor.Processor).
type Processor interface {
	Process(ctx context.Context, entries []journal.Entry) error
}

// NewProcessor makes a processor whose every settled outcome observe sees.
type NewProcessor func(observe func(store.Outcome)) Processor

// Options say what to replay.
type Options struct {
	Filter journal.Filter
	// RetryDead decides dead-lettered entries again too.
	RetryDead bool
	// DryRun only says what a run would do.
	DryRun bool
	// Progress, when set, sees the report as it grows (every batch) and
	// once more at the end.
	Progress func(Report)
}

// Report is what a replay read and did. Counts are by what happened:
// "unchanged", "restored as stored", … for a run; "unchanged", "would be
// restored", "dead-lettered, would be retried", … for a dry run.
type Report struct {
	DryRun bool
	Read   int
	Counts map[string]int
	Done   bool
}

func (r Report) clone() Report {
	r.Counts = maps.Clone(r.Counts)
	return r
}

// Keys lists the report's counts by name.
func (r Report) Keys() []string { return slices.Sorted(maps.Keys(r.Counts)) }

// batchSize is how many entries one decision transaction of a run takes.
const batchSize = 512

// Run replays the window: with DryRun it reads the store's outcome of each
// entry; otherwise it decides them again in batches through the processor
// newProcessor makes (which may be nil for a dry run).
func Run(ctx context.Context, j Journal, st Store, newProcessor NewProcessor, opts Options) (Report, error) {
	r := Report{DryRun: opts.DryRun, Counts: map[string]int{}}
	progress := func() {
		if opts.Progress != nil {
			opts.Progress(r.clone())
		}
	}
	var proc Processor
	if !opts.DryRun {
		proc = newProcessor(func(o store.Outcome) {
			if o.Replayed {
				r.Counts["unchanged"]++
			} else {
				r.Counts["restored as "+o.Decision]++
			}
		})
	}
	var batch []journal.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := proc.Process(ctx, batch)
		batch = batch[:0]
		if err == nil {
			err = ctx.Err()
		}
		progress()
		return err
	}
	err := j.Read(ctx, opts.Filter, func(e journal.Entry) error {
		r.Read++
		if opts.DryRun {
			if err := r.look(ctx, st, e, opts.RetryDead); err != nil {
				return err
			}
			if r.Read%batchSize == 0 {
				progress()
			}
			return ctx.Err()
		}
		if opts.RetryDead {
			if _, err := st.ForgetDeadLetter(ctx, e.Form, e.Key); err != nil {
				return fmt.Errorf("retry dead letter %s/%s: %w", e.Form, e.Key, err)
			}
		}
		e.Handouts = 1
		batch = append(batch, e)
		if len(batch) >= batchSize {
			return flush()
		}
		return nil
	})
	if err == nil && !opts.DryRun {
		err = flush()
	}
	r.Done = err == nil
	progress()
	if err != nil {
		return r, fmt.Errorf("replay: stopped after %d entries: %w", r.Read, err)
	}
	return r, nil
}

// look counts what a run would do with e.
func (r *Report) look(ctx context.Context, st Store, e journal.Entry, retryDead bool) error {
	o, ok, err := st.Outcome(ctx, e.Form, e.Key)
	switch {
	case err != nil:
		return fmt.Errorf("read outcome of %s/%s: %w", e.Form, e.Key, err)
	case !ok:
		r.Counts["would be restored"]++
	case o.Status == store.StatusDeadLettered && retryDead:
		r.Counts["dead-lettered, would be retried"]++
	default:
		r.Counts["unchanged"]++
	}
	return nil
}

// ParseWindow reads the RFC 3339 bounds of a window; "" leaves a bound
// open. The error names the bound (as name) and what would be valid.
func ParseWindow(since, until string) (time.Time, time.Time, error) {
	var out [2]time.Time
	for i, t := range []struct{ name, v string }{{"since", since}, {"until", until}} {
		if t.v == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339, t.v)
		if err != nil {
			return out[0], out[1], fmt.Errorf("%s %q is not an RFC 3339 time such as 2027-03-01T09:00:00+08:00", t.name, t.v)
		}
		out[i] = ts
	}
	return out[0], out[1], nil
}
