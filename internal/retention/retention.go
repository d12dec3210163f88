// Package retention enforces each form's `retention`: once an entry is
// older than that, its submitted data is erased from the store (the row
// stays: id, key, status and receipt, so that a retry is still answered
// and the audit trail stands) and, where the journal driver can, the
// journal's copy is deleted. It is safe to run on every instance at once:
// each pass is a bounded, idempotent statement.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/prometheus/client_golang/prometheus"
)

// Eraser is the part of the store retention uses.
type Eraser interface {
	Erase(ctx context.Context, form string, before time.Time, limit int) (int, error)
}

// Pruner is a journal that can delete old entries (sqlitejournal). A
// journal without it keeps its entries by its own limits (a NATS stream's
// max_age).
type Pruner interface {
	Prune(ctx context.Context, form string, before time.Time, limit int) (int, error)
}

// Forms lists the forms.
type Forms interface {
	All() []*form.Form
}

// Job is the retention loop.
type Job struct {
	forms   Forms
	store   Eraser
	journal Pruner // nil when the journal cannot prune
	now     func() time.Time
	log     *slog.Logger
	erased  prometheus.Counter
	pruned  prometheus.Counter
}

// chunk bounds one statement, so that retention never holds a writer long.
const chunk = 1000

// New makes the job; journal may be anything, it is used only if it is a
// Pruner. reg may be nil.
func New(forms Forms, st Eraser, journal any, now func() time.Time, log *slog.Logger, reg prometheus.Registerer) *Job {
	j := &Job{forms: forms, store: st, now: now, log: log,
		erased: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_retention_erased_total", Help: "Entries whose data retention erased from the store."}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{Name: "formd_retention_pruned_total", Help: "Journal entries retention deleted."}),
	}
	if p, ok := journal.(Pruner); ok {
		j.journal = p
	}
	if reg != nil {
		reg.MustRegister(j.erased, j.pruned)
	}
	return j
}

// RunOnce applies every form's retention once and says how many entries it
// erased from the store and deleted from the journal.
func (j *Job) RunOnce(ctx context.Context) (erased, pruned int, err error) {
	for _, f := range j.forms.All() {
		if f.Def.Retention == nil {
			continue
		}
		cutoff := j.now().Add(-time.Duration(*f.Def.Retention))
		n, err := drain(ctx, func(ctx context.Context) (int, error) { return j.store.Erase(ctx, f.ID(), cutoff, chunk) })
		erased += n
		j.erased.Add(float64(n))
		if err != nil {
			return erased, pruned, fmt.Errorf("retention of %s: %w", f.ID(), err)
		}
		if j.journal == nil {
			continue
		}
		n, err = drain(ctx, func(ctx context.Context) (int, error) { return j.journal.Prune(ctx, f.ID(), cutoff, chunk) })
		pruned += n
		j.pruned.Add(float64(n))
		if err != nil {
			return erased, pruned, fmt.Errorf("retention of %s: %w", f.ID(), err)
		}
	}
	return erased, pruned, nil
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
func (j *Job) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			erased, pruned, err := j.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				j.log.Warn("retention pass failed; it runs again at the next interval", "err", err)
			}
			if erased+pruned > 0 {
				j.log.Info("retention", "erased", erased, "pruned", pruned)
			}
		}
	}
}
