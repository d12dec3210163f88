package outbox

import (
	"time"

	"github.com/formd/formd/internal/attempt"
)

// Breaker defaults (Options.BreakerWindow, BreakerTrip, BreakerOpen,
// BreakerMaxOpen).
const (
	DefaultBreakerWindow  = 20
	DefaultBreakerTrip    = 16
	DefaultBreakerOpen    = 30 * time.Second
	DefaultBreakerMaxOpen = 10 * time.Minute
)

// breaker is one endpoint's circuit breaker. It is for an endpoint that
// is down, not for one that fails now and then: a flaky receiver is the
// business of each delivery's own retry schedule. So it opens on a
// failure rate — trip failures among the last window results — rather
// than on a short run of bad luck, and while it is open the results of
// attempts that were already in flight change nothing. When the open
// period ends, one attempt goes through as a probe: its success closes the
// breaker, its failure opens it again for twice the period (up to
// maxOpen). Nothing else doubles the period.
//
// It holds no lock and reads no clock: the dispatcher serialises the calls
// and passes the time, so that tests drive it with a fake clock.
type breaker struct {
	window, trip  int
	base, maxOpen time.Duration
	// probeTimeout is how long a probe may stay unanswered before another
	// is let through (its sender died, or its result was lost).
	probeTimeout time.Duration

	// results are the last window results while closed, true for a
	// failure, as a ring; failures counts the true ones.
	results  []bool
	next     int
	failures int

	state  breakerState
	period time.Duration
	until  time.Time // the end of the open period
	// probing is when the probe in flight started; zero when none is.
	probing time.Time
}

type breakerState int

const (
	breakerClosed   breakerState = iota
	breakerOpen                  // refusing attempts until the period ends
	breakerHalfOpen              // the period ended: one probe decides
)

// verdict is what an attempt says about its endpoint as a whole.
type verdict int

const (
	// neutral: nothing about the endpoint (a recipient refused, the form
	// no longer names it, nothing was sent).
	neutral verdict = iota
	// success: the endpoint took the attempt.
	success
	// failure: the endpoint could not be reached or failed as a whole.
	failure
)

// verdictOf is what an attempt's outcome says about its endpoint. Only a
// retry the endpoint itself caused counts as a failure (fault): for a
// webhook every retry, for e-mail a transport failure (connecting, TLS, a
// timeout, a 4xx to the session rather than to one recipient).
func verdictOf(o attempt.Outcome, fault bool) verdict {
	switch {
	case o == attempt.Delivered:
		return success
	case o == attempt.Retry && fault:
		return failure
	}
	return neutral
}

func newBreaker(window, trip int, base, maxOpen, probeTimeout time.Duration) *breaker {
	return &breaker{window: window, trip: trip, base: base, maxOpen: maxOpen, probeTimeout: probeTimeout, results: make([]bool, 0, window)}
}

// allow says whether an attempt may start at now. When the open period
// has ended it lets exactly one through as the probe (probe true) and
// holds the rest until the probe's result; wait is when to ask again when
// it says no.
func (b *breaker) allow(now time.Time) (ok, probe bool, wait time.Time) {
	switch b.state {
	case breakerOpen:
		if now.Before(b.until) {
			return false, false, b.until
		}
		b.state = breakerHalfOpen
		fallthrough
	case breakerHalfOpen:
		if !b.probing.IsZero() && now.Before(b.probing.Add(b.probeTimeout)) {
			return false, false, now
		}
		b.probing = now
		return true, true, time.Time{}
	}
	return true, false, time.Time{}
}

// blocked says whether no attempt could start at now: the claim leaves
// the endpoint's deliveries in the store meanwhile.
func (b *breaker) blocked(now time.Time) bool {
	switch b.state {
	case breakerOpen:
		return now.Before(b.until)
	case breakerHalfOpen:
		return !b.probing.IsZero() && now.Before(b.probing.Add(b.probeTimeout))
	}
	return false
}

// open says whether the breaker holds attempts back (open or half-open),
// for the gauge.
func (b *breaker) open() bool { return b.state != breakerClosed }

// record feeds an attempt's verdict to the breaker; probe says whether it
// was the probe allow let through. It says whether the breaker opened (or
// opened again after a failed probe).
func (b *breaker) record(now time.Time, v verdict, probe bool) (opened bool) {
	if b.state != breakerClosed {
		if !probe {
			// In flight when the breaker opened: the probe decides.
			return false
		}
		switch v {
		case success:
			b.close()
		case failure:
			b.period = min(2*b.period, b.maxOpen)
			b.state, b.until, b.probing = breakerOpen, now.Add(b.period), time.Time{}
			return true
		default:
			// The probe said nothing about the endpoint: the next attempt
			// probes again.
			b.probing = time.Time{}
		}
		return false
	}
	if v == neutral {
		return false
	}
	failed := v == failure
	if len(b.results) < b.window {
		b.results = append(b.results, failed)
	} else {
		if b.results[b.next] {
			b.failures--
		}
		b.results[b.next] = failed
		b.next = (b.next + 1) % b.window
	}
	if failed {
		b.failures++
	}
	if len(b.results) == b.window && b.failures >= b.trip {
		b.period = b.base
		b.state, b.until, b.probing = breakerOpen, now.Add(b.period), time.Time{}
		b.results, b.next, b.failures = b.results[:0], 0, 0
		return true
	}
	return false
}

// close forgets everything: a closed breaker starts counting afresh.
func (b *breaker) close() {
	b.state, b.period, b.until, b.probing = breakerClosed, 0, time.Time{}, time.Time{}
	b.results, b.next, b.failures = b.results[:0], 0, 0
}

// breakerKey is the breaker that covers an endpoint: its own, or for
// e-mail the SMTP server's, one for all mail.
func breakerKey(endpoint string) string {
	if endpoint == endpointOwner || endpoint == endpointConfirm {
		return breakerSMTP
	}
	return endpoint
}

// breakerOf is the breaker of a key, made on first use; d.mu is held.
func (d *Dispatcher) breakerOf(key string) *breaker {
	b := d.breakers[key]
	if b == nil {
		o := d.opts
		b = newBreaker(o.BreakerWindow, o.BreakerTrip, o.BreakerOpen, o.BreakerMaxOpen, 2*o.SendTimeout)
		d.breakers[key] = b
	}
	return b
}

// allow asks an endpoint's breaker whether an attempt may start now (see
// breaker.allow).
func (d *Dispatcher) allow(key string, now time.Time) (ok, probe bool, wait time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.breakerOf(key)
	ok, probe, wait = b.allow(now)
	d.opts.Metrics.breakerState(key, b.open())
	return ok, probe, wait
}

// record feeds an attempt's verdict to its endpoint's breaker.
func (d *Dispatcher) record(key string, v verdict, probe bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.breakerOf(key)
	if b.record(now, v, probe) {
		d.opts.Metrics.breakerOpened.Inc()
		d.opts.Logger.Warn("outbox: an endpoint's circuit breaker opened; its deliveries wait for a probe", "endpoint", key, "for", b.period)
	}
	d.opts.Metrics.breakerState(key, b.open())
}
