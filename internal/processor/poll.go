package processor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/formd/formd/internal/store"
)

// OutcomeReader reads the outcomes of the keys that have been decided
// (store.OutcomesReader), for the poll.
type OutcomeReader func(ctx context.Context, keys []store.Key) ([]store.Outcome, error)

// PollOptions tune Notifier.Poll.
type PollOptions struct {
	// Every is the poll's period while outcomes reach the waiting
	// requests only through it (announcements lost, or none), and its
	// first period after an idle time.
	Every time.Duration
	// Max is the longest period, reached by doubling while outcomes reach
	// the waiting requests without the poll: the bound on the wait for an
	// outcome whose announcement was lost. Default 10 × Every.
	Max time.Duration
	// Keys bounds the keys read by one query. Default 4096.
	Keys   int
	Logger *slog.Logger
	// After is the clock's timer: a channel that receives once d has
	// passed. Default time.After; tests hand the periods out themselves.
	After func(d time.Duration) <-chan time.Time
}

// Poll is an instance's safety net for outcomes decided elsewhere whose
// announcement did not come (lost, or for an instance that died): one
// query for all the keys its requests wait for, each period, until ctx
// ends. An instance with no request waiting does nothing. While outcomes
// keep reaching waiting requests without the poll (announcements and
// local decisions), its period doubles up to Max; when the poll finds an
// outcome that nothing delivered, it goes back to Every.
func (n *Notifier) Poll(ctx context.Context, read OutcomeReader, opts PollOptions) {
	if opts.Every <= 0 {
		return
	}
	if opts.Max < opts.Every {
		opts.Max = 10 * opts.Every
	}
	if opts.Keys <= 0 {
		opts.Keys = 4096
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.After == nil {
		opts.After = time.After
	}
	period := opts.Every
	failing := 0 // polls failed in a row
	for {
		for n.waiting.Load() == 0 {
			// Idle: sleep until a request waits, then a full period. (A
			// wake left from a request that has stopped waiting since
			// finds nobody, and sleeps again.)
			period = opts.Every
			select {
			case <-ctx.Done():
				return
			case <-n.woken:
			}
		}
		before := n.delivered.Load()
		select {
		case <-ctx.Done():
			return
		case <-opts.After(period):
		}
		found, err := n.pollOnce(ctx, read, opts.Keys)
		switch {
		case err != nil:
			// The store unavailable: say so once, and ask it less often
			// until it answers.
			if failing == 0 && ctx.Err() == nil {
				opts.Logger.Warn("poll for outcomes decided elsewhere failed; backing off until the store answers", "err", err)
			}
			failing++
			period = min(2*period, opts.Max)
		case found > 0:
			period = opts.Every
		case n.delivered.Load() > before:
			period = min(2*period, opts.Max)
		default:
			period = opts.Every
		}
		if err == nil {
			failing = 0
		}
	}
}

// pollOnce reads the outcomes of the waiting keys in one query and hands
// them to their requests; it returns how many it found.
func (n *Notifier) pollOnce(ctx context.Context, read OutcomeReader, max int) (int, error) {
	keys := n.keys(max)
	if len(keys) == 0 {
		return 0, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	outs, err := read(rctx, keys)
	if err != nil {
		return 0, fmt.Errorf("read %d outcomes: %w", len(keys), err)
	}
	for _, o := range outs {
		n.Publish(o)
	}
	return len(outs), nil
}
