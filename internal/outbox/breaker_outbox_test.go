package outbox_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// The breaker in the dispatcher, against real receivers and a real store.

// drive runs the dispatcher step by step, as Run would, until a step finds
// nothing to do, waiting for each step's sends: with a fake clock, time
// moves only when the test says.
func (f *fixture) drive() {
	f.t.Helper()
	ctx := context.Background()
	for range 1000 {
		fanned, err := f.d.FanOutOnce(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		started, err := f.d.SendOnce(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		poll.Until(f.t, "the step's sends", 15*time.Second, f.d.Idle)
		if fanned == 0 && started == 0 {
			return
		}
	}
	f.t.Fatal("the dispatcher never ran out of work")
}

// gauge reads formd_delivery_breaker_open of an endpoint (-1: not set).
func gauge(t *testing.T, reg *prometheus.Registry, endpoint string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "formd_delivery_breaker_open" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == endpoint {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// TestAFlakyReceiverIsNotShutOut: a receiver that fails a third of the
// attempts at random gets all of 300 events without the breaker ever
// holding it back (it would hold it for an hour here): its retries are
// the deliveries' business. This is the black-box check that failed one
// run in three when five failures in a row opened the breaker.
func TestAFlakyReceiverIsNotShutOut(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	// The n-th request to arrive fails as this seed says: its first 1,000
	// draws hold a run of five failures (which tripped the old breaker)
	// and never more than 13 in any 20, well below the 16 that trip the
	// breaker, whatever order the four concurrent sends' results arrive in.
	rng := rand.New(rand.NewPCG(18, 3))
	r := newReceiver(t, func(_ int, w http.ResponseWriter) {
		mu.Lock()
		fail := rng.IntN(3) == 0
		mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	reg := prometheus.NewRegistry()
	schedule := make([]time.Duration, 20)
	for i := range schedule {
		schedule[i] = 20 * time.Millisecond
	}
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{BreakerOpen: time.Hour, Schedule: schedule, Metrics: outbox.NewMetrics(reg)})
	f.run()
	var data []string
	for i := range 300 {
		data = append(data, fmt.Sprintf(`{"name":"p%d"}`, i))
	}
	f.submit("fair", data...)
	poll.Until(t, "300 events delivered, or the breaker opened", 60*time.Second, func() bool {
		return len(r.deliveries()) >= 300 || breakerOpened(t, reg) > 0
	})
	if n := breakerOpened(t, reg); n > 0 {
		t.Fatalf("the breaker opened %v times on a receiver failing a third of the time; %d of 300 delivered", n, len(r.deliveries()))
	}
	if calls := r.calls.Load(); calls < 330 {
		t.Fatalf("the receiver failed %d of %d attempts: not a flaky receiver", calls-300, calls)
	}
}

// TestAReceiverDownThenUp: a receiver down for 20s trips the breaker; its
// events arrive within one breaker period plus one retry of its coming
// back, because only the probe at the end of the period decides (the
// failures of the attempts in flight when it opened do not double it).
func TestAReceiverDownThenUp(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock(time.Now())
	start := clk.Now()
	upAt := start.Add(20 * time.Second)
	r := newReceiver(t, func(_ int, w http.ResponseWriter) {
		if clk.Now().Before(upAt) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	reg := prometheus.NewRegistry()
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{Now: clk.Now, Metrics: outbox.NewMetrics(reg)})
	var data []string
	for i := range 40 {
		data = append(data, fmt.Sprintf(`{"name":"p%d"}`, i))
	}
	f.submit("fair", data...)
	endpoint := hookEndpoint(r.srv.URL)
	sawOpen := false
	for len(r.deliveries()) < 40 && clk.Now().Before(start.Add(10*time.Minute)) {
		f.drive()
		sawOpen = sawOpen || gauge(t, reg, endpoint) == 1
		clk.Advance(time.Second)
	}
	done := clk.Now()
	if !sawOpen || breakerOpened(t, reg) < 1 {
		t.Fatal("the breaker never opened while the receiver was down: the test tests nothing")
	}
	// One period (30s) and one retry step (5s, +20 % jitter), and the
	// test's step of a second.
	if limit := upAt.Add(outbox.DefaultBreakerOpen + 6*time.Second + time.Second); len(r.deliveries()) < 40 || done.After(limit) {
		t.Fatalf("%d of 40 delivered %v after the receiver came back; want all within %v", len(r.deliveries()), done.Sub(upAt), limit.Sub(upAt))
	}
	if g := gauge(t, reg, endpoint); g != 0 {
		t.Fatalf("formd_delivery_breaker_open = %v after the deliveries, want 0", g)
	}
}

// TestADeadReceiver: a receiver down for good keeps the breaker open; it
// is probed once per period, the period doubling up to its maximum, and
// each delivery follows its retry schedule (counting only the attempts
// made) to a dead letter.
func TestADeadReceiver(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock(time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var calls []time.Time
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls = append(calls, clk.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(dead.Close)
	reg := prometheus.NewRegistry()
	schedule := []time.Duration{5 * time.Second, time.Minute, 5 * time.Minute}
	f := newFixture(t, hookForm(dead.URL, ""), nil, outbox.Options{Now: clk.Now, Metrics: outbox.NewMetrics(reg), Schedule: schedule,
		BreakerWindow: 5, BreakerTrip: 5, BreakerOpen: 30 * time.Second, BreakerMaxOpen: 2 * time.Minute})
	var data []string
	for i := range 5 {
		data = append(data, fmt.Sprintf(`{"name":"p%d"}`, i))
	}
	outs := f.submit("fair", data...)
	ctx := context.Background()
	const step = 5 * time.Second
	for clk.Now().Before(time.Date(2027, 3, 1, 11, 0, 0, 0, time.UTC)) {
		f.drive()
		if st, err := f.st.DeliveryStats(ctx); err != nil || st.Failed == 5 {
			break
		}
		clk.Advance(step)
	}
	for _, o := range outs {
		ds, as := f.deliveriesOf(o.ID)
		if len(ds) != 1 || ds[0].State != store.DeliveryFailed || ds[0].Attempts != len(schedule)+1 || len(as) != len(schedule)+1 {
			t.Fatalf("a dead receiver's delivery: %+v with %d attempts logged; want a dead letter after %d attempts", ds, len(as), len(schedule)+1)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The five first attempts open it; then one probe a period, never
	// sooner, and no later than the test's step while something is due:
	// surely for the first five probes, as four deliveries wait for their
	// second attempt until then (later, all may wait for a retry).
	period := 30 * time.Second
	for i := 5; i < len(calls); i++ {
		gap := calls[i].Sub(calls[i-1])
		if gap < period || (gap >= period+step && i < 10) {
			t.Fatalf("probe %d came %v after the one before; want the period %v (calls %v)", i-4, gap, period, calls)
		}
		period = min(2*period, 2*time.Minute)
	}
	if len(calls) != 5*(len(schedule)+1) {
		t.Fatalf("%d calls, want %d", len(calls), 5*(len(schedule)+1))
	}
	if g := gauge(t, reg, hookEndpoint(dead.URL)); g != 1 {
		t.Fatalf("formd_delivery_breaker_open = %v for a dead receiver, want 1", g)
	}
}

// hookEndpoint is the endpoint id of a webhook URL.
func hookEndpoint(url string) string { return form.Webhook{URL: url}.Endpoint() }
