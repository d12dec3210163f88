package outbox

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/webhooks"
)

// finish records deliveries' attempts or deferrals. What senders finish
// while a commit is under way waits for the next, which the sender that
// made the first commits: a busy outbox commits once for many
// deliveries. A failure to record is logged (the lease runs out and the
// delivery is sent again, with the same id).
func (d *Dispatcher) finish(ctx context.Context, fs ...store.Finish) {
	d.fmu.Lock()
	d.finished = append(d.finished, fs...)
	if d.flushing {
		d.fmu.Unlock()
		return
	}
	d.flushing = true
	for len(d.finished) > 0 {
		batch := d.finished
		d.finished = nil
		d.fmu.Unlock()
		if err := d.st.FinishDeliveries(ctx, batch, d.opts.Now()); err != nil {
			d.opts.Logger.Warn("outbox: deliveries not recorded; they are sent again when their leases run out", "deliveries", len(batch), "err", err)
		}
		d.fmu.Lock()
	}
	d.flushing = false
	d.fmu.Unlock()
}

// retryAt is when a delivery that failed its n-th attempt is tried
// again, or false once the schedule is spent.
func (d *Dispatcher) retryAt(n int, now time.Time, retryAfter time.Duration) (time.Time, bool) {
	if n > len(d.opts.Schedule) {
		return time.Time{}, false
	}
	wait := d.opts.Schedule[n-1]
	wait += time.Duration((rand.Float64()*0.4 - 0.2) * float64(wait))
	return now.Add(max(wait, retryAfter)), true
}

// deliver sends one group (one delivery, or the owner's digest) and
// records the attempt for each of its deliveries; probe says the
// endpoint's breaker let it through as its probe.
func (d *Dispatcher) deliver(ctx context.Context, group []store.Delivery, docs entryDocs, probe bool) {
	start := d.opts.Now()
	kind, r := d.try(ctx, group, docs)
	now := d.opts.Now()
	if r.Latency == 0 {
		r.Latency = now.Sub(start)
	}
	d.record(breakerKey(group[0].Endpoint), verdictOf(r.Outcome, r.Fault), probe, now)
	if r.Outcome != attempt.Deferred {
		d.opts.Metrics.observe(kind, r, group[0].Endpoint)
	}
	if r.Code != "" && !strings.Contains(r.Excerpt, r.Code) {
		r.Excerpt = webhooks.Excerpt([]byte(kind + " code " + r.Code + ": " + r.Excerpt))
	}
	fs := make([]store.Finish, 0, len(group))
	for _, dl := range group {
		f := store.Finish{DeliveryKey: dl.DeliveryKey, Owner: d.opts.Owner, Counted: true}
		if r.Outcome != attempt.Deferred {
			f.Attempt = store.Attempt{DeliveryKey: dl.DeliveryKey, At: start, Status: r.Status, Latency: r.Latency, Outcome: r.Outcome, Excerpt: r.Excerpt}
		}
		if r.Err != nil {
			f.Error = r.Err.Error()
		}
		switch r.Outcome {
		case attempt.Delivered:
			f.State = store.DeliveryDelivered
		case attempt.Skipped:
			f.State = store.DeliverySkipped
		case attempt.Deferred:
			f.State, f.NextAt, f.Counted = store.DeliveryPending, now.Add(time.Minute), false
		case attempt.Gone, attempt.Refused:
			f.State = store.DeliveryFailed
		default:
			if at, ok := d.retryAt(dl.Attempts+1, now, r.RetryAfter); ok {
				f.State, f.NextAt = store.DeliveryPending, at
			} else {
				f.State = store.DeliveryFailed
			}
		}
		if f.State == store.DeliveryFailed {
			d.opts.Logger.Warn("outbox: a delivery failed for good and is a dead letter", "form", dl.Event.Form, "endpoint", dl.Endpoint,
				"event", dl.Event.ID(), "attempts", dl.Attempts+1, "err", f.Error)
		}
		fs = append(fs, f)
	}
	if r.Outcome == attempt.Gone {
		d.disable(ctx, group[0], fs, now)
		return
	}
	d.finish(ctx, fs...)
}

// disable records a 410 Gone, then switches its endpoint off (which skips
// the endpoint's pending deliveries). The attempt is committed first, on
// its own, so that the delivery that met the 410 is never seen skipped.
func (d *Dispatcher) disable(ctx context.Context, dl store.Delivery, fs []store.Finish, now time.Time) {
	if err := d.st.FinishDeliveries(ctx, fs, now); err != nil {
		d.opts.Logger.Warn("outbox: a 410 Gone not recorded; the delivery is sent again when its lease runs out", "endpoint", dl.Endpoint, "err", err)
		return
	}
	reason := fmt.Sprintf("the receiver answered 410 Gone at %s: formd stopped delivering to it; fix the URL in the form and enable the endpoint again", now.UTC().Format(time.RFC3339))
	if err := d.st.DisableEndpoint(ctx, dl.Endpoint, dl.Event.Form, reason, now); err != nil {
		d.opts.Logger.Warn("outbox: endpoint not disabled", "endpoint", dl.Endpoint, "err", err)
		return
	}
	d.mu.Lock()
	d.goneAt[dl.Endpoint] = now
	d.mu.Unlock()
	d.opts.Logger.Warn("outbox: an endpoint answered 410 Gone and is disabled", "form", dl.Event.Form, "endpoint", dl.Endpoint)
}

// try sends a group once, through the channel of its endpoint.
func (d *Dispatcher) try(ctx context.Context, group []store.Delivery, docs entryDocs) (string, Outcome) {
	dl := group[0]
	c := d.channelOf(dl.Endpoint)
	if c == nil {
		return "unknown", Outcome{Outcome: attempt.Refused, Err: errors.New("no channel of this formd delivers to " + dl.Endpoint)}
	}
	f := d.forms.Get(dl.Event.Form)
	if f == nil {
		return c.Kind(), Outcome{Outcome: attempt.Refused, Err: errors.New("the form no longer exists")}
	}
	r := c.Send(ctx, &Job{Form: f, Blocks: d.blocksOf(f), Endpoint: dl.Endpoint, Group: group, d: d, docs: docs})
	if r.Outcome == "" {
		r.Outcome = attempt.Retry
	}
	if r.Excerpt == "" && r.Err != nil && r.Outcome != attempt.Delivered {
		r.Excerpt = webhooks.Excerpt([]byte(r.Err.Error()))
	}
	return c.Kind(), r
}
