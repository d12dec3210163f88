package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/webhooks"
	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// delivery is one request a receiver got.
type delivery struct {
	id, typ string
	body    map[string]any
	at      time.Time
}

// receiver is a real HTTP endpoint on 127.0.0.1 that checks every
// signature with the Standard Webhooks reference library and answers as
// its answer function says.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	answer func(n int, w http.ResponseWriter)
	mu     sync.Mutex
	got    []delivery
	calls  atomic.Int32
	// inFlight counts deliveries of one id being handled at once, and
	// overlaps those that arrived while another of the same id was in.
	inFlight map[string]int
	overlaps atomic.Int32
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{t: t, answer: answer, inFlight: map[string]int{}}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := int(r.calls.Add(1))
		body, _ := io.ReadAll(req.Body)
		if err := wh.Verify(body, req.Header); err != nil {
			t.Errorf("a delivery's signature does not verify: %v", err)
		}
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		r.inFlight[id]++
		if r.inFlight[id] > 1 {
			r.overlaps.Add(1)
		}
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight[id]--
			r.mu.Unlock()
		}()
		if r.answer != nil {
			rec := httptest.NewRecorder()
			r.answer(n, rec)
			if rec.Code/100 != 2 {
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				return
			}
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("a delivery's body is not JSON: %s", body)
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{id: id, typ: fmt.Sprint(m["type"]), body: m, at: time.Now()})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// fixture is a real SQLite store with forms applied and a dispatcher.
type fixture struct {
	t     *testing.T
	st    *sqlitestore.Store
	forms *form.Registry
	seq   uint64
	d     *outbox.Dispatcher
}

func newFixture(t *testing.T, formsYAML string, mail outbox.Mailer, opts outbox.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(t.TempDir(), "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	set, err := form.ParseSet([]byte(formsYAML), "test", webhooks.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}).CheckURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutForms(ctx, set.Records()); err != nil {
		t.Fatal(err)
	}
	reg := form.NewRegistry(st, slog.New(slog.DiscardHandler))
	if err := reg.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Poll == 0 {
		opts.Poll = 10 * time.Millisecond
	}
	// The sender's attempts end at the test's SendTimeout when it sets
	// one (a test of hanging endpoints must not see them time out
	// underneath it on a slow machine), else soon.
	timeout := 300 * time.Millisecond
	if opts.SendTimeout > 0 {
		timeout = opts.SendTimeout
	}
	sender := webhooks.NewSender(webhooks.Options{Guard: webhooks.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), Timeout: timeout})
	return &fixture{t: t, st: st, forms: reg, d: outbox.New(st, reg, sender, mail, opts)}
}

// submit decides entries of a form, as the processor would.
func (f *fixture) submit(formID string, data ...string) []store.Outcome {
	f.t.Helper()
	var es []journal.Entry
	for _, d := range data {
		f.seq++
		es = append(es, journal.Entry{Seq: f.seq, ID: fmt.Sprintf("e%04d", f.seq), Site: "default", Form: formID, Key: fmt.Sprint("k", f.seq),
			Fingerprint: [32]byte{byte(f.seq)}, ReceivedAt: time.Now().UTC(), Data: []byte(d)})
	}
	out, err := f.st.Apply(context.Background(), es)
	if err != nil {
		f.t.Fatal(err)
	}
	f.d.Wake()
	return out
}

// step fans out and starts the sends once, as one turn of Run does.
func (f *fixture) step() {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.d.FanOutOnce(ctx); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.d.SendOnce(ctx); err != nil {
		f.t.Fatal(err)
	}
}

// run runs the dispatcher until the test ends.
func (f *fixture) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.d.Run(ctx); close(done) }()
	f.t.Cleanup(func() { cancel(); <-done })
}

func (f *fixture) deliveriesOf(entryID string) ([]store.Delivery, []store.Attempt) {
	f.t.Helper()
	ds, as, err := f.st.Deliveries(context.Background(), entryID)
	if err != nil {
		f.t.Fatal(err)
	}
	return ds, as
}

// waitState waits until the entry's deliveries are all in state.
func (f *fixture) waitState(entryID, state string) {
	f.t.Helper()
	poll.Until(f.t, "deliveries "+state, 15*time.Second, func() bool {
		ds, _ := f.deliveriesOf(entryID)
		for _, d := range ds {
			if d.State != state {
				return false
			}
		}
		return len(ds) > 0
	})
}

func hookForm(url string, extra string) string {
	return fmt.Sprintf(`
id: fair
title: Fair
fields:
  - {name: name, type: text}
  - {name: email, type: email}
capacity: 1
when_full: waitlist
notify:
  webhooks:
    - {url: %q, secret: %s%s}
`, url, secret, extra)
}

// TestWebhookDelivered: each event reaches the endpoint once, signed, with
// its stable id and the entry's body; the delivery log says so.
func TestWebhookDelivered(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, nil)
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{})
	f.run()
	outs := f.submit("fair", `{"name":"Ann","email":"ann@example.org","_extra":{"utm":"poster"}}`, `{"name":"Bo"}`)
	poll.Until(t, "two deliveries", 15*time.Second, func() bool { return len(r.deliveries()) == 2 })
	got := r.deliveries()
	// Deliveries to one endpoint may overlap, so they may arrive in any
	// order: receivers order by the event's timestamp if they must.
	if got[0].typ != store.EventStored {
		got[0], got[1] = got[1], got[0]
	}
	first := got[0]
	if got[1].id == first.id {
		t.Fatalf("two events with one id: %+v", got)
	}
	if first.id != "evt_"+outs[0].ID+"_stored" || first.typ != store.EventStored {
		t.Fatalf("first delivery %+v", first)
	}
	data := first.body["data"].(map[string]any)
	if data["id"] != outs[0].ID || data["form"] != "fair" || data["site"] != "default" || data["status"] != "stored" || data["key"] != "k1" ||
		!strings.HasPrefix(fmt.Sprint(data["receipt"]), "01") || data["received_at"] == "" {
		t.Fatalf("event body %v", first.body)
	}
	if inner := data["data"].(map[string]any); inner["name"] != "Ann" || inner["email"] != "ann@example.org" {
		t.Fatalf("the entry's data: %v", inner)
	}
	if extra := data["extra"].(map[string]any); extra["utm"] != "poster" {
		t.Fatalf("the entry's extra fields: %v", data["extra"])
	}
	if got[1].typ != store.EventWaitlisted {
		t.Fatalf("the second is waitlisted: %+v", got[1])
	}
	f.waitState(outs[0].ID, store.DeliveryDelivered)
	ds, as := f.deliveriesOf(outs[0].ID)
	if len(ds) != 1 || ds[0].State != store.DeliveryDelivered || len(as) != 1 || as[0].Status != 204 || as[0].Outcome != attempt.Delivered {
		t.Fatalf("delivery log: %+v %+v", ds, as)
	}
	// Cancelling the first promotes the second: two more events.
	if _, err := f.st.Cancel(context.Background(), "fair", outs[0].ID); err != nil {
		t.Fatal(err)
	}
	f.d.Wake()
	poll.Until(t, "the cancel and the promotion", 15*time.Second, func() bool { return len(r.deliveries()) == 4 })
	types := map[string]bool{}
	for _, d := range r.deliveries()[2:] {
		types[d.typ] = true
	}
	if !types[store.EventCancelled] || !types[store.EventPromoted] {
		t.Fatalf("after cancel: %v", types)
	}
}

// TestRetriesUntilDelivered: an endpoint that fails twice gets the event
// on the third attempt, the same id each time; every attempt is logged.
func TestRetriesUntilDelivered(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{Schedule: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	poll.Until(t, "the delivery", 15*time.Second, func() bool { return len(r.deliveries()) == 1 })
	f.waitState(outs[0].ID, store.DeliveryDelivered)
	ds, as := f.deliveriesOf(outs[0].ID)
	if ds[0].Attempts != 3 || len(as) != 3 || as[0].Status != 503 || as[1].Status != 503 || as[2].Outcome != attempt.Delivered {
		t.Fatalf("attempts: %+v %+v", ds, as)
	}
}

// TestRetryAfterIsHonoured: a 429 with Retry-After: 1 is tried again no
// sooner than a second later, although the schedule says sooner.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{Schedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	poll.Until(t, "the delivery", 15*time.Second, func() bool { return len(r.deliveries()) == 1 })
	f.waitState(outs[0].ID, store.DeliveryDelivered)
	_, as := f.deliveriesOf(outs[0].ID)
	if len(as) != 2 || as[0].Status != 429 {
		t.Fatalf("attempts: %+v", as)
	}
	if gap := as[1].At.Sub(as[0].At); gap < 900*time.Millisecond {
		t.Fatalf("the retry came %v after a Retry-After of 1s", gap)
	}
}

// TestGoneDisablesTheEndpoint: a 410 stops deliveries to the endpoint,
// says why, and skips its later events.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, func(int, http.ResponseWriter) {})
	r.answer = func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	poll.Until(t, "the endpoint disabled", 15*time.Second, func() bool {
		off, _ := f.st.DisabledEndpoints(context.Background())
		return len(off) == 1
	})
	off, _ := f.st.DisabledEndpoints(context.Background())
	if reason := off[form.Webhook{URL: r.srv.URL}.Endpoint()]; !strings.Contains(reason, "410") {
		t.Fatalf("disabled: %v", off)
	}
	if ds, _ := f.deliveriesOf(outs[0].ID); ds[0].State != store.DeliveryFailed {
		t.Fatalf("the 410's delivery: %+v", ds)
	}
	calls := r.calls.Load()
	later := f.submit("fair", `{"name":"Bo"}`)
	poll.Until(t, "the later event fanned out", 15*time.Second, func() bool { ds, _ := f.deliveriesOf(later[0].ID); return len(ds) == 1 })
	if ds, _ := f.deliveriesOf(later[0].ID); ds[0].State != store.DeliverySkipped {
		t.Fatalf("a later delivery to a disabled endpoint: %+v", ds)
	}
	if r.calls.Load() != calls {
		t.Fatal("a disabled endpoint was called again")
	}
}

// TestExhaustedThenRedelivered: a delivery that fails every attempt of its
// schedule is a dead letter, and a redelivery sends it once the receiver
// is fixed.
func TestExhaustedThenRedelivered(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	broken.Store(true)
	r := newReceiver(t, func(_ int, w http.ResponseWriter) {
		if broken.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{Schedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}})
	f.run()
	outs := f.submit("fair", `{"name":"Ann"}`)
	poll.Until(t, "the dead letter", 15*time.Second, func() bool {
		ds, _ := f.deliveriesOf(outs[0].ID)
		return len(ds) == 1 && ds[0].State == store.DeliveryFailed
	})
	if ds, as := f.deliveriesOf(outs[0].ID); ds[0].Attempts != 3 || len(as) != 3 {
		t.Fatalf("attempts before giving up: %+v %+v", ds, as)
	}
	broken.Store(false)
	n, err := f.st.Redeliver(context.Background(), store.DeliverySelection{Form: "fair", FailedOnly: true}, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("redeliver: %d %v", n, err)
	}
	f.d.Wake()
	poll.Until(t, "the redelivery", 15*time.Second, func() bool { return len(r.deliveries()) == 1 })
}

// TestADeadEndpointDoesNotHoldUpOthers: an endpoint that hangs does not
// delay another endpoint's deliveries, and holds no more than its own
// sends; once it fails instead, its breaker opens, so it is not called for
// every event.
func TestADeadEndpointDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	var deadCalls, deadDone atomic.Int32
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadCalls.Add(1)
		defer deadDone.Add(1)
		select {
		case <-hang: // released: it fails from now on
			w.WriteHeader(http.StatusInternalServerError)
		case <-r.Context().Done():
		}
	}))
	released := false
	release := func() {
		if !released {
			released = true
			close(hang)
		}
	}
	t.Cleanup(func() { release(); dead.Close() })
	good := newReceiver(t, nil)
	yaml := fmt.Sprintf(`
id: fair
fields: [{name: name, type: text}]
notify:
  webhooks:
    - {url: %q, secret: %s}
    - {url: %q, secret: %s}
`, dead.URL, secret, good.srv.URL, secret)
	reg := prometheus.NewRegistry()
	// The attempts hang until released: no timeout ends them in the test.
	f := newFixture(t, yaml, nil, outbox.Options{Workers: 8, PerEndpoint: 2, BreakerWindow: 3, BreakerOpen: time.Hour,
		SendTimeout: time.Hour, Lease: 3 * time.Hour, Metrics: outbox.NewMetrics(reg),
		Schedule: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}})
	f.run()
	var data []string
	for i := range 30 {
		data = append(data, fmt.Sprintf(`{"name":"p%d"}`, i))
	}
	f.submit("fair", data...)
	poll.Until(t, "the good endpoint's 30 deliveries", 15*time.Second, func() bool { return len(good.deliveries()) == 30 })
	if n := deadDone.Load(); n != 0 {
		t.Fatalf("%d of the dead endpoint's attempts ended before the good endpoint's deliveries: they did not wait for it", n)
	}
	if n := deadCalls.Load(); n > 2 {
		t.Fatalf("the hanging endpoint holds %d sends, more than its 2", n)
	}
	release()
	poll.Until(t, "the dead endpoint's breaker open, with no attempt in flight", 15*time.Second, func() bool {
		return breakerOpened(t, reg) >= 1 && deadDone.Load() == deadCalls.Load()
	})
	if n := deadCalls.Load(); n > 10 {
		t.Fatalf("the dead endpoint was called %d times for 30 events: its breaker did not hold it off", n)
	}
}

// breakerOpened reads formd_delivery_breaker_opened_total.
func breakerOpened(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "formd_delivery_breaker_opened_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestPrivateAddressesAreRefused: without an allow-list, an endpoint on a
// loopback address is refused when the form is applied, and if one gets
// through (a name that resolves there), at connect time, for good.
func TestPrivateAddressesAreRefused(t *testing.T) {
	t.Parallel()
	_, err := form.ParseChecked([]byte(hookForm("http://127.0.0.1:9/hook", "")), "forms.yaml", webhooks.NewGuard(nil).CheckURL)
	if err == nil || !strings.Contains(err.Error(), "notify.webhooks[0].url") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("apply with a loopback endpoint: %v", err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{hookForm("ftp://example.org/x", ""), "scheme"},
		{strings.Replace(hookForm("https://example.org/x", ""), secret, "hunter2", 1), "whsec_"},
		{hookForm("https://example.org/x", ", events: [submission.exploded]"), "not an event"},
	} {
		if _, err := form.Parse([]byte(bad.yaml), "forms.yaml"); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.want, err, bad.want)
		}
	}
	r := newReceiver(t, nil)
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(t.TempDir(), "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	url := strings.Replace(r.srv.URL, "127.0.0.1", "localhost.", 1)
	defs, err := form.Parse([]byte(hookForm(url, "")), "test") // syntax only, as a stored form is read
	if err != nil {
		t.Fatal(err)
	}
	st.PutForms(ctx, form.Records(defs))
	reg := form.NewRegistry(st, slog.New(slog.DiscardHandler))
	reg.Refresh(ctx)
	d := outbox.New(st, reg, webhooks.NewSender(webhooks.Options{Guard: webhooks.NewGuard(nil)}), nil, outbox.Options{Logger: slog.New(slog.DiscardHandler)})
	outs, err := st.Apply(ctx, []journal.Entry{{Seq: 1, ID: "e1", Site: "default", Form: "fair", Key: "k1", ReceivedAt: time.Now(), Data: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	d.FanOutOnce(ctx)
	d.SendOnce(ctx)
	poll.Until(t, "the refusal", 15*time.Second, func() bool {
		ds, _, _ := st.Deliveries(ctx, outs[0].ID)
		return len(ds) == 1 && ds[0].State == store.DeliveryFailed
	})
	if r.calls.Load() != 0 {
		t.Fatal("the loopback endpoint was called")
	}
}

// TestSiteWebhooks: a site's webhooks get the events of every form of
// the site, beside the form's own; one URL named by both gets each event
// once.
func TestSiteWebhooks(t *testing.T) {
	t.Parallel()
	site := newReceiver(t, nil)
	own := newReceiver(t, nil)
	f := newFixture(t, fmt.Sprintf(`
site: default
notify:
  webhooks: [{url: %q, secret: %s}]
---
id: fair
fields: [{name: name, type: text}]
notify:
  webhooks: [{url: %q, secret: %s}, {url: %q, secret: %s}]
---
id: plain
fields: [{name: name, type: text}]
`, site.srv.URL, secret, own.srv.URL, secret, site.srv.URL, secret), nil, outbox.Options{})
	f.run()
	f.submit("fair", `{"name":"Ann"}`)
	f.submit("plain", `{"name":"Bo"}`)
	poll.Until(t, "the site's two and the form's one", 15*time.Second, func() bool { return len(site.deliveries()) == 2 && len(own.deliveries()) == 1 })
	poll.Holds(t, "the site's endpoint has one delivery per event", 100*time.Millisecond, func() bool { return len(site.deliveries()) == 2 })
}

// TestGoneStopsTheBatch: after a 410, the rest of each batch to that
// endpoint claimed before it is not sent but skipped: with one send at a
// time the receiver hears once; with two batches in flight, at most twice.
func TestGoneStopsTheBatch(t *testing.T) {
	t.Parallel()
	for _, per := range []int{1, 2} {
		t.Run(fmt.Sprint("per-endpoint-", per), func(t *testing.T) {
			t.Parallel()
			r := newReceiver(t, func(int, http.ResponseWriter) {})
			r.answer = func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) }
			f := newFixture(t, hookForm(r.srv.URL, ""), nil, outbox.Options{PerEndpoint: per})
			outs := f.submit("fair", `{"name":"Ann"}`, `{"name":"Bo"}`, `{"name":"Cy"}`, `{"name":"Di"}`, `{"name":"Ed"}`, `{"name":"Flo"}`)
			f.run()
			count := func() (failed, skipped int) {
				for _, o := range outs {
					ds, _ := f.deliveriesOf(o.ID)
					for _, d := range ds {
						switch d.State {
						case store.DeliveryFailed:
							failed++
						case store.DeliverySkipped:
							skipped++
						}
					}
				}
				return failed, skipped
			}
			// A delivery in flight in another batch when the endpoint is
			// switched off reads "skipped" until its own 410 is recorded:
			// wait for every call's attempt, not only for every state.
			poll.Until(t, "the deliveries finished, each call's 410 recorded", 15*time.Second, func() bool {
				failed, skipped := count()
				return failed+skipped == len(outs) && failed == int(r.calls.Load())
			})
			if calls := int(r.calls.Load()); calls < 1 || calls > per {
				t.Fatalf("the receiver was called %d times after its 410, with %d batches in flight", calls, per)
			}
		})
	}
}
