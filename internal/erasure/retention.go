// Package erasure removes submitted data that must go: a form's
// `retention` (Retention, a background pass) and a person who asks to be
// forgotten (Forget). Erasing an entry removes its data and the
// participant claims derived from it from the store — the row stays: id,
// key, status and the keyed receipt, so that a retry is still answered and
// the audit trail stands — and, where the journal driver can, deletes the
// journal's copy. SQLite files overwrite deleted content and truncate their
// write-ahead log, so no file under the data directory keeps the values.
// Both are safe to run on every instance at once: each step is bounded and
// idempotent.
package erasure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/loop"
	"github.com/prometheus/client_golang/prometheus"
)

// Eraser is the part of the store retention uses.
type Eraser interface {
	Erase(ctx context.Context, form string, before time.Time, limit int) (int, error)
	// ExpireDrafts deletes drafts past their form's draft_ttl
	// (store.Drafts): each draft carries its expiry from its last save.
	ExpireDrafts(ctx context.Context, now time.Time, limit int) (int, error)
}

// Forms lists the forms.
type Forms interface {
	All() []*form.Form
}

// Retention is the loop that applies each form's retention.
type Retention struct {
	forms   Forms
	store   Eraser
	journal journal.Pruner // nil when the journal cannot prune
	now     func() time.Time
	log     *slog.Logger
	erased  prometheus.Counter
	pruned  prometheus.Counter
	drafts  prometheus.Counter
}

// chunk bounds one statement, so that retention never holds a writer long.
const chunk = 1000

// NewRetention makes the job; pruner is nil when the journal cannot prune
// (it keeps entries by its own limits, such as a NATS stream's max_age).
// reg may be nil.
func NewRetention(forms Forms, st Eraser, pruner journal.Pruner, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Retention {
	j := &Retention{forms: forms, store: st, journal: pruner, now: now, log: log,
		erased: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_retention_erased_total", Help: "Entries whose data retention erased from the store."}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_retention_pruned_total", Help: "Journal entries retention deleted."}),
		drafts: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_retention_drafts_expired_total", Help: "Drafts retention deleted after their draft_ttl."}),
	}
	if reg != nil {
		reg.MustRegister(j.erased, j.pruned, j.drafts)
	}
	return j
}

// RunOnce applies every form's retention once and says how many entries it
// erased from the store and deleted from the journal. A form whose step
// fails does not stop the others: the pass goes on and returns every
// form's error (a busy write-ahead log is no error: the drivers retry it
// and, still busy, leave it to the next checkpoint).
func (j *Retention) RunOnce(ctx context.Context) (erased, pruned int, err error) {
	var errs []error
	// Drafts expire by their own time, whatever form they are of.
	now := j.now()
	n, err := drain(ctx, func(ctx context.Context) (int, error) { return j.store.ExpireDrafts(ctx, now, chunk) })
	j.drafts.Add(float64(n))
	if err != nil {
		errs = append(errs, fmt.Errorf("expire drafts: %w", err))
	}
	for _, f := range j.forms.All() {
		if f.Def.Retention == nil || ctx.Err() != nil {
			continue
		}
		cutoff := j.now().Add(-time.Duration(*f.Def.Retention))
		n, err := drain(ctx, func(ctx context.Context) (int, error) { return j.store.Erase(ctx, f.ID(), cutoff, chunk) })
		erased += n
		j.erased.Add(float64(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("retention of %s: %w", f.ID(), err))
			continue
		}
		if j.journal == nil {
			continue
		}
		n, err = drain(ctx, func(ctx context.Context) (int, error) { return j.journal.Prune(ctx, f.ID(), cutoff, chunk) })
		pruned += n
		j.pruned.Add(float64(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("retention of %s: %w", f.ID(), err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return erased, pruned, errors.Join(errs...)
}

// drain repeats a bounded step until it does less than a full chunk.
func drain(ctx context.Context, step func(context.Context) (int, error)) (int, error) {
	total := 0
	for {
		n, err := step(ctx)
		total += n
		if err != nil || n < chunk || ctx.Err() != nil {
			return total, err
		}
	}
}

// Run applies retention every interval until ctx ends.
func (j *Retention) Run(ctx context.Context, every time.Duration) {
	loop.Every(ctx, every, func() {
		erased, pruned, err := j.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			j.log.Warn("retention pass failed; it runs again at the next interval", "err", err)
		}
		if erased+pruned > 0 {
			j.log.Info("retention", "erased", erased, "pruned", pruned)
		}
	})
}
