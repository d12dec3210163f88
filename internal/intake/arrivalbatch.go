package intake

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/formd/formd/internal/store"
)

// Bounds of the arrival batcher: reports are written at most
// arrivalFlushEvery after they came, or as soon as arrivalFlushAt are
// held; beyond arrivalHeldMax held (the store slower than the beacons) a
// request writes its own reports, as without the batcher, so that the
// buffer is bounded and nothing is dropped for room.
const (
	arrivalFlushEvery = 100 * time.Millisecond
	arrivalFlushAt    = 1000
	arrivalHeldMax    = 20000
)

// ArrivalBatcher holds the arrival reports of many beacon requests and
// writes them together: one RecordArrivals per form (and KnownOnly) every
// arrivalFlushEvery, instead of a transaction per request — under a peak
// two beacons a submission were as many store writes as the entries.
// It is an Arrivals for the Handler (Config.Arrivals); Run writes.
//
// Beacons are best-effort telemetry, and the batcher trades their
// durability for that: a 202 now means the reports are held in memory.
// A crash (or a kill -9) loses what was held, at most the last
// arrivalFlushEvery of reports (up to arrivalFlushAt a form); a write
// that fails drops its reports and logs how many. A shutdown writes what
// is held after the requests in flight are answered.
type ArrivalBatcher struct {
	st  Arrivals
	log *slog.Logger

	mu     sync.Mutex
	held   map[arrivalGroup]*heldArrivals
	order  []arrivalGroup // in the order they came, so forms are written fairly
	n      int            // reports and refusals held
	closed bool
	kick   chan struct{}
}

type arrivalGroup struct {
	form      string
	knownOnly bool
}

type heldArrivals struct {
	b   store.ArrivalBatch
	now time.Time // the latest request's
}

// NewArrivalBatcher makes a batcher that writes to st.
func NewArrivalBatcher(st Arrivals, log *slog.Logger) *ArrivalBatcher {
	return &ArrivalBatcher{st: st, log: log, held: map[arrivalGroup]*heldArrivals{}, kick: make(chan struct{}, 1)}
}

// RecordArrivals holds b for the next write and answers at once (0
// dropped: which reports the store drops is known only when written).
// When the batcher holds arrivalHeldMax, or is stopped, it writes b
// itself, as the store would.
func (a *ArrivalBatcher) RecordArrivals(ctx context.Context, form string, b store.ArrivalBatch, now time.Time) (int, error) {
	size := len(b.Reports) + min(b.Refused, 1)
	a.mu.Lock()
	if a.closed || a.n+size > arrivalHeldMax {
		a.mu.Unlock()
		return a.st.RecordArrivals(ctx, form, b, now)
	}
	g := arrivalGroup{form: form, knownOnly: b.KnownOnly}
	h := a.held[g]
	if h == nil {
		h = &heldArrivals{b: store.ArrivalBatch{KnownOnly: b.KnownOnly}}
		a.held[g] = h
		a.order = append(a.order, g)
	}
	h.b.Reports = append(h.b.Reports, b.Reports...)
	h.b.Refused += b.Refused
	if now.After(h.now) {
		h.now = now
	}
	a.n += size
	full := a.n >= arrivalFlushAt
	a.mu.Unlock()
	if full {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	return 0, nil
}

// Flush writes what is held, a form at a time. A write that fails is
// not tried again: its reports are dropped and logged. It returns how
// many reports it wrote.
func (a *ArrivalBatcher) Flush(ctx context.Context) int {
	a.mu.Lock()
	held, order := a.held, a.order
	a.held, a.order, a.n = map[arrivalGroup]*heldArrivals{}, nil, 0
	a.mu.Unlock()
	written := 0
	for _, g := range order {
		h := held[g]
		// At most arrivalFlushAt reports a transaction, so that a backlog
		// does not hold the store's writer for long; the refusals go with
		// the first.
		for first := true; first || len(h.b.Reports) > 0; first = false {
			b := h.b
			b.Reports = h.b.Reports[:min(len(h.b.Reports), arrivalFlushAt)]
			h.b.Reports, h.b.Refused = h.b.Reports[len(b.Reports):], 0
			if _, err := a.st.RecordArrivals(ctx, g.form, b, h.now); err != nil {
				a.log.Warn("arrivals: reports not written, dropped", "form", g.form, "reports", len(b.Reports), "refused", b.Refused, "err", err)
				continue
			}
			written += len(b.Reports)
		}
	}
	return written
}

// Run writes what is held every arrivalFlushEvery, and when
// arrivalFlushAt are held, until ctx ends; then it writes what is left
// and from then on lets each request write its own. Run it after the
// HTTP server has stopped taking requests, or let the requests that
// come after write their own.
func (a *ArrivalBatcher) Run(ctx context.Context) {
	tick := time.NewTicker(arrivalFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.closed = true
			a.mu.Unlock()
			a.flush(ctx)
			return
		case <-tick.C:
			a.flush(ctx)
		case <-a.kick:
			a.flush(ctx)
		}
	}
}

// flush is Flush bounded by 5 s, and not by ctx: reports taken out of
// the buffer are written even when ctx ends meanwhile (a shutdown).
func (a *ArrivalBatcher) flush(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	a.Flush(fctx)
}
