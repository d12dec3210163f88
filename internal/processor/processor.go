// Package processor applies journal entries to the store: a bounded pool of
// workers takes batches from the journal, has the store decide them in one
// transaction, wakes the requests waiting for those outcomes, and only then
// acknowledges the entries. A failing store is retried with backoff while
// the entries stay pending; an entry that fails on its own is retried a few
// times and then dead-lettered with its reason; a reconciler re-drives
// entries left pending too long.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/loop"
	"github.com/formd/formd/internal/store"
)

// Source is the part of the journal the processor consumes.
type Source interface {
	Fetch(ctx context.Context, max int) ([]journal.Entry, error)
	Ack(ctx context.Context, seqs ...uint64) error
	Nak(ctx context.Context, seq uint64, delay time.Duration) error
	Pending(ctx context.Context, deliveredBefore time.Time, limit int) ([]journal.Entry, error)
}

// Decider is the part of the store the processor writes to.
type Decider interface {
	Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error)
	DeadLetter(ctx context.Context, sub journal.Entry, reason string, attempts int) (store.Outcome, error)
}

// Options configure a processor; zero values take the defaults.
type Options struct {
	// Workers is the size of the pool. Default 1, which keeps decisions in
	// arrival order; a store that takes concurrent writers (PostgreSQL)
	// gains from more.
	Workers int
	// BatchSize bounds the entries decided in one transaction. Default 512.
	BatchSize int
	// MaxAttempts is how often an entry that fails on its own is tried
	// before it is dead-lettered. Default 5.
	MaxAttempts int
	// RetryBase and RetryMax bound the backoff between attempts, for a
	// failing store and for a failing entry. Defaults 50ms and 5s.
	RetryBase, RetryMax time.Duration
	// ReconcileEvery is how often the reconciler looks for stale entries,
	// and StaleAfter how long an entry may stay delivered but unacknowledged
	// before the reconciler re-drives it. Defaults 5s and 30s.
	ReconcileEvery, StaleAfter time.Duration
	// ApplyTimeout bounds one store transaction. Default 30s.
	ApplyTimeout time.Duration
	// Observe, if set, sees every outcome as it is settled (replay counts
	// them).
	Observe func(store.Outcome)
	// Announce, if set, tells the instances whose requests wait
	// (journal.Entry.Waiter) about the outcomes of each settled batch, so
	// that those requests wake at once. outs[i] is the outcome of
	// entries[i].
	Announce func(entries []journal.Entry, outs []store.Outcome)
	// Settled, if set, is called after each batch's outcomes are
	// committed: their events are in the outbox (the deliveries' cue).
	Settled func()
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// The defaults of the settings --batch-size, --max-attempts,
// --reconcile-every and --stale-after (package config shows them).
const (
	DefaultBatchSize      = 512
	DefaultMaxAttempts    = 5
	DefaultReconcileEvery = 5 * time.Second
	DefaultStaleAfter     = 30 * time.Second
)

func (o *Options) setDefaults() {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 50 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 5 * time.Second
	}
	if o.ReconcileEvery <= 0 {
		o.ReconcileEvery = DefaultReconcileEvery
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.ApplyTimeout <= 0 {
		o.ApplyTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
}

// Processor is the pool of workers and the reconciler.
type Processor struct {
	src    Source
	store  Decider
	notify *Notifier
	opts   Options
}

// New makes a processor. Outcomes are published to notify.
func New(src Source, st Decider, notify *Notifier, opts Options) *Processor {
	opts.setDefaults()
	return &Processor{src: src, store: st, notify: notify, opts: opts}
}

// Run starts the workers and the reconciler and blocks until ctx ends and
// they have finished the batch in hand. Entries not acknowledged by then
// stay in the journal for the next start.
func (p *Processor) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range p.opts.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := p.runOnce(ctx); err != nil && ctx.Err() == nil {
					p.opts.Logger.Error("processor worker", "err", err)
				}
			}
		})
	}
	wg.Go(func() {
		loop.Every(ctx, p.opts.ReconcileEvery, func() {
			if _, err := p.Reconcile(ctx); err != nil && ctx.Err() == nil {
				p.opts.Logger.Warn("reconciler", "err", err)
			}
		})
	})
	wg.Wait()
	return nil
}

// runOnce takes one batch from the journal and sees it through.
func (p *Processor) runOnce(ctx context.Context) error {
	entries, err := p.src.Fetch(ctx, p.opts.BatchSize)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, journal.ErrClosed) {
			<-ctx.Done()
			return nil
		}
		return fmt.Errorf("fetch: %w", err)
	}
	return p.Process(ctx, entries)
}

// Process decides a batch of entries, retrying while the store is
// unavailable. It returns when every entry has an outcome (and is acked) or
// has been handed back to the journal for a later attempt, or when ctx ends.
// Replay and the reconciler use it too: deciding an entry twice is a replay.
func (p *Processor) Process(ctx context.Context, entries []journal.Entry) error {
	for attempt := 0; ; attempt++ {
		err := p.apply(ctx, entries)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil // the entries stay pending in the journal
		}
		p.opts.Metrics.storeErrors.Inc()
		if attempt == 0 || attempt%20 == 0 {
			p.opts.Logger.Warn("store unavailable; the batch stays pending and will be retried",
				"err", err, "entries", len(entries), "attempt", attempt+1)
		}
		if !sleep(ctx, p.backoff(attempt)) {
			return nil
		}
	}
}

// apply decides entries in the store, in one transaction where it can
// (bisect). A failure of the store itself is returned for the caller to
// retry; an entry that fails on its own goes to failed.
func (p *Processor) apply(ctx context.Context, entries []journal.Entry) error {
	return p.bisect(ctx, entries, func(ctx context.Context, es []journal.Entry) ([]store.Outcome, error) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.ApplyTimeout)
		defer cancel()
		return p.store.Apply(actx, es)
	}, func(es []journal.Entry, outs []store.Outcome) { p.settle(ctx, es, outs) }, func(e journal.Entry, err error) error {
		return p.failed(ctx, e, err)
	})
}

// bisect decides entries with apply in one call, and when they fail on
// their own splits them in two until each entry that fails is alone, so
// that one bad entry never holds up its neighbours. decided gets each
// batch decided, failed each entry that failed alone. A failure of the
// store itself (storeFailed) stops it and is returned.
func (p *Processor) bisect(ctx context.Context, entries []journal.Entry,
	apply func(context.Context, []journal.Entry) ([]store.Outcome, error),
	decided func([]journal.Entry, []store.Outcome), failed func(journal.Entry, error) error,
) error {
	if len(entries) == 0 {
		return nil
	}
	start := p.opts.Now()
	outs, err := apply(ctx, entries)
	p.opts.Metrics.applySeconds.Observe(p.opts.Now().Sub(start).Seconds())
	switch {
	case err == nil:
		decided(entries, outs)
		return nil
	case storeFailed(err):
		return err
	case len(entries) == 1:
		return failed(entries[0], err)
	}
	half := len(entries) / 2
	err = p.bisect(ctx, entries[:half], apply, decided, failed)
	if storeFailed(err) {
		return err
	}
	return errors.Join(err, p.bisect(ctx, entries[half:], apply, decided, failed))
}

// storeFailed says err is a failure of the store itself rather than of
// the entries: unavailable, or out of time.
func storeFailed(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// failed handles an entry that the store refused on its own: a redelivery
// after a backoff, or a dead letter once it has had its attempts.
func (p *Processor) failed(ctx context.Context, e journal.Entry, cause error) error {
	if e.Handouts < p.opts.MaxAttempts {
		p.opts.Logger.Warn("entry failed; it will be retried", "form", e.Form, "seq", e.Seq, "attempt", e.Handouts, "err", cause)
		if err := p.src.Nak(ctx, e.Seq, p.backoff(e.Handouts)); err != nil {
			return fmt.Errorf("nak %d: %w", e.Seq, err)
		}
		return nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.ApplyTimeout)
	defer cancel()
	o, err := p.store.DeadLetter(actx, e, cause.Error(), e.Handouts)
	if err != nil {
		return fmt.Errorf("dead-letter %s/%d: %w", e.Form, e.Seq, err)
	}
	if o.Replayed {
		// Decided meanwhile, dead-lettered before, or its id is another
		// entry's: the store kept the outcome it had (see store.Store).
		p.opts.Logger.Warn("entry given up on already had an outcome; it stands", "form", e.Form, "seq", e.Seq,
			"outcome_id", o.ID, "outcome_key", o.Key, "decision", o.Decision, "err", cause)
	} else {
		p.opts.Logger.Error("entry dead-lettered", "form", e.Form, "seq", e.Seq, "attempts", e.Handouts, "err", cause)
	}
	p.settle(ctx, []journal.Entry{e}, []store.Outcome{o})
	return nil
}

// settle publishes outcomes and only then acknowledges the entries: the
// store has committed them, so a lost ack costs a replay, never an entry.
func (p *Processor) settle(ctx context.Context, entries []journal.Entry, outs []store.Outcome) {
	p.publish(entries, outs)
	seqs := make([]uint64, len(entries))
	for i, e := range entries {
		seqs[i] = e.Seq
	}
	if err := p.src.Ack(context.WithoutCancel(ctx), seqs...); err != nil {
		// The entries will be delivered again and replayed; nothing is lost.
		p.opts.Logger.Warn("journal ack failed", "err", err, "entries", len(seqs))
	}
}

// publish hands committed outcomes to the requests waiting for them, the
// observers and other instances, and cues the outbox. outs[i] is the
// outcome of entries[i].
func (p *Processor) publish(entries []journal.Entry, outs []store.Outcome) {
	for _, o := range outs {
		p.notify.Publish(o)
		if p.opts.Observe != nil {
			p.opts.Observe(o)
		}
		p.opts.Metrics.observe(o)
	}
	if p.opts.Announce != nil {
		p.opts.Announce(entries, outs)
	}
	if p.opts.Settled != nil {
		p.opts.Settled()
	}
}

// DecideInline decides entries with apply inside the transaction that
// journals them (the embedded fast path), by the same rules as Process: a
// batch that fails on its own is split until the entries that fail are
// isolated. Those, and the whole batch when the store itself fails, are
// left undecided: the journal delivers them to the workers as any entry,
// with their retries and dead letters. It says which entries were decided
// and returns what to do once the transaction has committed: publish
// their outcomes. apply must leave the transaction as it found it when it
// fails.
func (p *Processor) DecideInline(ctx context.Context, entries []journal.Entry, apply func(context.Context, []journal.Entry) ([]store.Outcome, error)) ([]bool, func()) {
	decided := make([]bool, len(entries))
	pos := make(map[*journal.Entry]int, len(entries))
	for i := range entries {
		pos[&entries[i]] = i
	}
	var outs []store.Outcome
	var of []journal.Entry // the entries of outs
	err := p.bisect(ctx, entries, apply, func(es []journal.Entry, o []store.Outcome) {
		for i := range es {
			decided[pos[&es[i]]] = true
		}
		outs = append(outs, o...)
		of = append(of, es...)
	}, func(e journal.Entry, err error) error {
		p.opts.Logger.Warn("entry failed at append; it is left to the processor", "form", e.Form, "seq", e.Seq, "err", err)
		return nil
	})
	if err != nil {
		p.opts.Metrics.storeErrors.Inc()
		p.opts.Logger.Warn("store unavailable at append; the entries are left to the processor", "err", err)
	}
	p.opts.Metrics.atAppend.Add(float64(len(outs)))
	if len(outs) == 0 {
		return decided, nil
	}
	return decided, func() { p.publish(of, outs) }
}

// Reconcile re-drives entries delivered more than StaleAfter ago and still
// unacknowledged: a worker that died, an ack that was lost. It returns how
// many it re-drove.
func (p *Processor) Reconcile(ctx context.Context) (int, error) {
	stale, err := p.src.Pending(ctx, p.opts.Now().Add(-p.opts.StaleAfter), p.opts.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("list pending: %w", err)
	}
	if len(stale) == 0 {
		return 0, nil
	}
	p.opts.Metrics.reconciled.Add(float64(len(stale)))
	p.opts.Logger.Info("reconciler re-drives stale entries", "entries", len(stale))
	return len(stale), p.Process(ctx, stale)
}

func (p *Processor) backoff(attempt int) time.Duration {
	d := p.opts.RetryBase << min(attempt, 16)
	if d <= 0 || d > p.opts.RetryMax {
		d = p.opts.RetryMax
	}
	// Full jitter, so that instances retrying a shared store spread out.
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
