package intake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// countedRefusals are the refusals the console counts: submissions turned
// away at the door, of which nothing is kept (issue 21 item 6). A full
// form's refusal is an entry (rejected) and counted as one.
var countedRefusals = map[string]bool{problem.CodeFormClosed: true, problem.CodeValidationFailed: true}

// RefusalTally counts refusals in memory and adds them to the store in one
// transaction per period (Run), so that a burst of bad posts costs a few
// writes, not one each. Counts not yet written when the process dies are
// lost: they are a tally for the owner, not a record of anyone's data.
type RefusalTally struct {
	st  store.Refusals
	now func() time.Time
	log *slog.Logger

	mu     sync.Mutex
	counts map[refusalKey]int64
}

type refusalKey struct {
	form, reason string
	hour         time.Time
}

// maxTallied bounds the (form, hour, reason) counts held between writes;
// past it, refusals are not counted until the next write.
const maxTallied = 10000

// NewRefusalTally makes a tally that writes to st.
func NewRefusalTally(st store.Refusals, now func() time.Time, log *slog.Logger) *RefusalTally {
	return &RefusalTally{st: st, now: now, log: log, counts: map[refusalKey]int64{}}
}

// Note counts a refusal of a form's submission, when its problem is one
// the tally keeps.
func (t *RefusalTally) Note(form string, refusal error) {
	if t == nil {
		return
	}
	code := problem.From(refusal).Code
	if !countedRefusals[code] {
		return
	}
	k := refusalKey{form: form, reason: code, hour: t.now().UTC().Truncate(time.Hour)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.counts[k]; ok || len(t.counts) < maxTallied {
		t.counts[k]++
	}
}

// Flush writes the counts held. On failure they are kept for the next
// try.
func (t *RefusalTally) Flush(ctx context.Context) error {
	t.mu.Lock()
	held := t.counts
	t.counts = map[refusalKey]int64{}
	t.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	counts := make([]store.RefusalCount, 0, len(held))
	for k, n := range held {
		counts = append(counts, store.RefusalCount{Form: k.form, Reason: k.reason, Hour: k.hour, N: n})
	}
	if err := t.st.AddRefusals(ctx, counts); err != nil {
		t.mu.Lock()
		for k, n := range held {
			if _, ok := t.counts[k]; ok || len(t.counts) < maxTallied {
				t.counts[k] += n
			}
		}
		t.mu.Unlock()
		return err
	}
	return nil
}

// Run writes the counts every period until ctx ends, then once more.
func (t *RefusalTally) Run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := t.Flush(fctx); err != nil {
				t.log.Warn("intake refusals: last write", "err", err)
			}
			return
		case <-tick.C:
			if err := t.Flush(ctx); err != nil && ctx.Err() == nil {
				t.log.Warn("intake refusals: write", "err", err)
			}
		}
	}
}
