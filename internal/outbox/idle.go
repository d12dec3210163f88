package outbox

import (
	"context"
	"time"
)

// The dispatcher's rounds cost the store a fan-out and a claim each,
// whatever they find. Their number follows the period and the instance,
// not the entries: a round a wake starts comes Gather after the last at
// the earliest (the wakes of every batch decided meanwhile make one), a
// round runs again at once only when the last found more than it took,
// and an idle instance makes one round a Poll.

// more says a round should run again at once: its fan-out took a full
// batch (more events may wait) or it started sends (more deliveries may
// be due than its budget let it claim). A fan-out that took fewer events
// than a batch took them all: its deliveries were claimed in the same
// round.
func more(fanned, started int) bool { return fanned >= fanOutBatch || started > 0 }

// gather waits until Gather has passed since the round that started at
// last, letting the wakes that come meanwhile fold into the next round.
// It returns false when ctx ends first.
func (d *Dispatcher) gather(ctx context.Context, last time.Time) bool {
	wait := d.opts.Gather - d.opts.Now().Sub(last)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		// A wake that came during the wait is in this round.
		select {
		case <-d.wake:
		default:
		}
		return true
	}
}
