package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// outboxCases are the outbox's rules, run by Run for every driver.
var outboxCases = []storeCase{
	{"OutboxFanOutOnce", testFanOut},
	{"OutboxClaimPerEndpoint", testClaimPerEndpoint},
	{"OutboxClaimInEventOrder", testClaimEventOrder},
	{"OutboxLeasesAndAttempts", testLeases},
	{"OutboxRedeliverAndDisable", testRedeliver},
	{"OutboxConcurrentClaimsNeverShare", testConcurrentClaims},
	{"OutboxConcurrentFanOutTakesEachOnce", testConcurrentFanOut},
}

// someEvents decides n entries of form f, which writes their events.
func someEvents(t *testing.T, s store.Store, f string, n int) {
	t.Helper()
	putForm(t, s, f, nil, "")
	var subs []journal.Entry
	for i := range n {
		subs = append(subs, sub(f, fmt.Sprint("k", i), uint64(i+1)))
	}
	mustApply(t, s, subs...)
}

// fanOut fans every unfanned event out to the endpoints and returns the
// events.
func fanOut(t *testing.T, s store.Store, now time.Time, endpoints ...string) []store.Event {
	t.Helper()
	var evs []store.Event
	for {
		n, err := s.FanOut(ctxT(t), 1000, now, func(batch []store.Event) []store.NewDelivery {
			evs = append(evs, batch...)
			var ds []store.NewDelivery
			for _, e := range batch {
				for _, ep := range endpoints {
					ds = append(ds, store.NewDelivery{DeliveryKey: store.DeliveryKey{EventSeq: e.Seq, Endpoint: ep}, Form: e.Form, Site: e.Site})
				}
			}
			return ds
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return evs
		}
	}
}

func claim(t *testing.T, s store.Store, owner string, now time.Time, limit int) []store.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(ctxT(t), owner, now, time.Minute, store.ClaimQuery{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// testFanOut: every event is fanned out once; its deliveries are added
// once; a delivery due later waits.
func testFanOut(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 3)
	evs := fanOut(t, s, now, "webhook:a", "email:owner")
	if len(evs) != 3 || evs[0].Type != store.EventStored || evs[0].Seq >= evs[1].Seq {
		t.Fatalf("events %+v", evs)
	}
	if again := fanOut(t, s, now, "webhook:a"); len(again) != 0 {
		t.Fatalf("events fanned out twice: %+v", again)
	}
	mail, err := s.ClaimDeliveries(ctxT(t), "a", now, time.Minute, store.ClaimQuery{Limit: 100, Endpoint: "email:owner"})
	if err != nil || len(mail) != 3 || mail[0].Endpoint != "email:owner" {
		t.Fatalf("claim one endpoint: %+v %v", mail, err)
	}
	rest, err := s.ClaimDeliveries(ctxT(t), "a", now, time.Minute, store.ClaimQuery{Limit: 100, Except: "email:owner"})
	if err != nil || len(rest) != 3 || rest[0].Endpoint != "webhook:a" {
		t.Fatalf("claim all but one endpoint: %+v %v", rest, err)
	}
	// A delivery due later is not claimed before its time.
	someEvents(t, s, "g", 1)
	if _, err := s.FanOut(ctxT(t), 10, now, func(batch []store.Event) []store.NewDelivery {
		return []store.NewDelivery{{DeliveryKey: store.DeliveryKey{EventSeq: batch[0].Seq, Endpoint: "webhook:later"}, Form: "g", Site: "site", NextAt: now.Add(time.Minute)}}
	}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, "a", now.Add(30*time.Second), 100); len(got) != 0 {
		t.Fatalf("claimed before it was due: %+v", got)
	}
	st, err := s.DeliveryStats(ctxT(t))
	if err != nil || st.Pending != 7 || st.UnfannedEvents != 0 || st.OldestPending.IsZero() {
		t.Fatalf("stats %+v %v", st, err)
	}
}

// testClaimPerEndpoint: one claim takes at most PerEndpoint of one
// endpoint, and none of an excluded one, so a long backlog of one endpoint
// does not crowd out the others.
func testClaimPerEndpoint(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 10)
	fanOut(t, s, now, "webhook:slow", "webhook:fast")
	ds, err := s.ClaimDeliveries(ctxT(t), "o", now, time.Minute, store.ClaimQuery{Limit: 100, PerEndpoint: 3})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, d := range ds {
		per[d.Endpoint]++
	}
	if per["webhook:slow"] != 3 || per["webhook:fast"] != 3 {
		t.Fatalf("per endpoint: %v", per)
	}
	ds, err = s.ClaimDeliveries(ctxT(t), "o", now, time.Minute, store.ClaimQuery{Limit: 100, Exclude: []string{"webhook:slow"}})
	if err != nil || len(ds) != 7 {
		t.Fatalf("claim excluding one: %d %v, want the other's 7", len(ds), err)
	}
	for _, d := range ds {
		if d.Endpoint == "webhook:slow" {
			t.Fatalf("an excluded endpoint's delivery was claimed: %+v", d)
		}
	}
}

// testClaimEventOrder: deliveries due at the same time (as a fan-out makes
// them) are claimed in event order, also a few at a time and a few per
// endpoint, so that a receiver gets an entry's stored before its
// cancelled.
func testClaimEventOrder(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	putForm(t, s, "f", nil, "")
	for i := range 4 {
		o := mustApply(t, s, sub("f", fmt.Sprint("k", i), uint64(i+1)))[0]
		if _, err := s.Cancel(ctx, "f", o.ID); err != nil {
			t.Fatal(err)
		}
	}
	evs := fanOut(t, s, now, "webhook:a", "webhook:b", "webhook:c")
	for _, q := range []store.ClaimQuery{{Limit: 1}, {Limit: 2, PerEndpoint: 1}, {Limit: 5, PerEndpoint: 2}} {
		// Every delivery pending again, all due at now.
		if _, err := s.Redeliver(ctx, store.DeliverySelection{Form: "f"}, now); err != nil {
			t.Fatal(err)
		}
		next := map[string]int{} // per endpoint: the index in evs of the event it gets next
		for range 100 {
			ds, err := s.ClaimDeliveries(ctx, "o", now, time.Minute, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				break
			}
			var done []store.Finish
			for i, d := range ds {
				if i > 0 && ds[i-1].EventSeq > d.EventSeq {
					t.Fatalf("%+v: one claim returned %v after %v", q, d.DeliveryKey, ds[i-1].DeliveryKey)
				}
				if want := evs[next[d.Endpoint]]; d.EventSeq != want.Seq {
					t.Fatalf("%+v: %s got event %d (%s) before event %d (%s)", q, d.Endpoint, d.EventSeq, d.Event.Type, want.Seq, want.Type)
				}
				next[d.Endpoint]++
				done = append(done, store.Finish{DeliveryKey: d.DeliveryKey, Owner: "o", State: store.DeliveryDelivered})
			}
			if err := s.FinishDeliveries(ctx, done, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, ep := range []string{"webhook:a", "webhook:b", "webhook:c"} {
			if next[ep] != len(evs) {
				t.Fatalf("%+v: %s got %d of %d events", q, ep, next[ep], len(evs))
			}
		}
	}
}

// testLeases: a leased delivery is not claimed again until its lease
// runs out; a finish under a lost lease changes nothing but the log; a
// retry waits for its time; the log keeps every attempt.
func testLeases(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 1)
	evs := fanOut(t, s, now, "webhook:a")
	a := claim(t, s, "instance-a", now, 10)
	if len(a) != 1 || a[0].Event.EntryID != evs[0].EntryID || a[0].Event.Type != store.EventStored || a[0].State != store.DeliveryPending {
		t.Fatalf("claim: %+v", a)
	}
	if b := claim(t, s, "instance-b", now.Add(time.Second), 10); len(b) != 0 {
		t.Fatalf("claimed again under a live lease: %+v", b)
	}
	// A single instance starting again frees its old leases at once.
	if n, err := s.ReleaseLeases(ctx); err != nil || n != 1 {
		t.Fatalf("release leases: %d %v", n, err)
	}
	if again := claim(t, s, "instance-a2", now.Add(time.Second), 10); len(again) != 1 {
		t.Fatalf("after releasing: %+v", again)
	}
	// instance-a2 died; its lease runs out and b takes the delivery over.
	b := claim(t, s, "instance-b", now.Add(2*time.Minute), 10)
	if len(b) != 1 {
		t.Fatalf("an expired lease is not taken over: %+v", b)
	}
	key := b[0].DeliveryKey
	stale := store.Finish{DeliveryKey: key, Owner: "instance-a", State: store.DeliveryDelivered, Counted: true,
		Attempt: store.Attempt{DeliveryKey: key, At: now.Add(61 * time.Second), Status: 200, Outcome: attempt.Delivered, Excerpt: "late"}}
	if err := s.FinishDeliveries(ctx, []store.Finish{stale}, now.Add(61*time.Second)); err != nil {
		t.Fatal(err)
	}
	retry := store.Finish{DeliveryKey: key, Owner: "instance-b", State: store.DeliveryPending, NextAt: now.Add(3 * time.Minute), Counted: true,
		Error: "503", Attempt: store.Attempt{DeliveryKey: key, At: now.Add(2 * time.Minute), Status: 503, Latency: 3 * time.Millisecond, Outcome: attempt.Retry, Excerpt: "busy"}}
	if err := s.FinishDeliveries(ctx, []store.Finish{retry}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c := claim(t, s, "instance-b", now.Add(150*time.Second), 10); len(c) != 0 {
		t.Fatalf("claimed before its retry time: %+v", c)
	}
	c := claim(t, s, "instance-b", now.Add(3*time.Minute), 10)
	if len(c) != 1 || c[0].Attempts != 1 || c[0].LastStatus != 503 {
		t.Fatalf("the retry: %+v", c)
	}
	done := store.Finish{DeliveryKey: key, Owner: "instance-b", State: store.DeliveryDelivered, Counted: true,
		Attempt: store.Attempt{DeliveryKey: key, At: now.Add(3 * time.Minute), Status: 204, Outcome: attempt.Delivered}}
	if err := s.FinishDeliveries(ctx, []store.Finish{done}, now.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ds, as, err := s.Deliveries(ctx, evs[0].EntryID)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].Attempts != 2 {
		t.Fatalf("deliveries of the entry: %+v %v", ds, err)
	}
	if len(as) != 3 || as[0].Excerpt != "late" || as[1].Status != 503 || as[1].Latency != 3*time.Millisecond || as[2].Outcome != attempt.Delivered {
		t.Fatalf("the log: %+v", as)
	}
	docs, err := s.EntryDocs(ctx, []string{evs[0].EntryID, "no-such-entry"})
	doc, ok := docs[evs[0].EntryID]
	if err != nil || !ok || len(docs) != 1 || doc.ID != evs[0].EntryID || doc.Key != "k0" || doc.Site != "site" || len(doc.Data) == 0 || doc.Receipt == ([32]byte{}) {
		t.Fatalf("entry docs: %+v %v", docs, err)
	}
}

// testRedeliver: redelivery makes delivered or failed deliveries pending
// again, by key or by form and window; a disabled endpoint's pending and
// future deliveries are skipped.
func testRedeliver(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 2)
	fanOut(t, s, now, "webhook:a")
	got := claim(t, s, "o", now, 10)
	var fs []store.Finish
	for i, d := range got {
		state := store.DeliveryDelivered
		if i == 0 {
			state = store.DeliveryFailed
		}
		fs = append(fs, store.Finish{DeliveryKey: d.DeliveryKey, Owner: "o", State: state, Counted: true})
	}
	// Several finishes commit together.
	if err := s.FinishDeliveries(ctx, fs, now); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DeliveryStats(ctx); st.Failed != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n, err := s.Redeliver(ctx, store.DeliverySelection{Form: "f", FailedOnly: true}, now); err != nil || n != 1 {
		t.Fatalf("redeliver failed ones: %d %v", n, err)
	}
	if n, err := s.Redeliver(ctx, store.DeliverySelection{Form: "f", Since: now.Add(time.Hour)}, now); err != nil || n != 0 {
		t.Fatalf("redeliver outside the window: %d %v", n, err)
	}
	k := got[1].DeliveryKey
	if n, err := s.Redeliver(ctx, store.DeliverySelection{Key: &k}, now); err != nil || n != 1 {
		t.Fatalf("redeliver one: %d %v", n, err)
	}
	again := claim(t, s, "o", now, 10)
	if len(again) != 2 || again[0].Attempts != 0 {
		t.Fatalf("redelivered: %+v", again)
	}
	if err := s.DisableEndpoint(ctx, "webhook:a", "f", "410 Gone", now); err != nil {
		t.Fatal(err)
	}
	// A delivery in flight when its endpoint was switched off, given
	// back, is skipped rather than pending again.
	if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: again[0].DeliveryKey, Owner: "o", State: store.DeliveryPending, NextAt: now}}, now); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DeliveryStats(ctx); st.Pending != 0 {
		t.Fatalf("a delivery given back to a disabled endpoint is pending: %+v", st)
	}
	if err := s.DisableEndpoint(ctx, "webhook:a", "f", "410 Gone", now); err != nil {
		t.Fatal(err)
	}
	if c := claim(t, s, "o", now.Add(time.Hour), 10); len(c) != 0 {
		t.Fatalf("a disabled endpoint's delivery was claimed: %+v", c)
	}
	someEvents(t, s, "g", 1)
	fanOut(t, s, now, "webhook:a")
	if c := claim(t, s, "o", now.Add(time.Hour), 10); len(c) != 0 {
		t.Fatalf("a new delivery to a disabled endpoint: %+v", c)
	}
	if off, err := s.DisabledEndpoints(ctx); err != nil || off["webhook:a"] != "410 Gone" {
		t.Fatalf("disabled: %v %v", off, err)
	}
	if err := s.EnableEndpoint(ctx, "webhook:a"); err != nil {
		t.Fatal(err)
	}
	if off, _ := s.DisabledEndpoints(ctx); len(off) != 0 {
		t.Fatalf("enabled again: %v", off)
	}
}

// testConcurrentClaims: owners claiming at once never get the same
// delivery.
func testConcurrentClaims(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 60)
	fanOut(t, s, now, "webhook:a", "webhook:b")
	var mu sync.Mutex
	seen := map[store.DeliveryKey]string{}
	var wg sync.WaitGroup
	for o := range 4 {
		owner := fmt.Sprint("owner-", o)
		wg.Go(func() {
			for {
				ds, err := s.ClaimDeliveries(ctxT(t), owner, now, time.Minute, store.ClaimQuery{Limit: 7})
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if prev, dup := seen[d.DeliveryKey]; dup {
						t.Errorf("%v claimed by %s and %s", d.DeliveryKey, prev, owner)
					}
					seen[d.DeliveryKey] = owner
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 120 {
		t.Fatalf("%d deliveries claimed, want 120", len(seen))
	}
}

// testConcurrentFanOut: fan-outs running at once take every event once.
func testConcurrentFanOut(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	someEvents(t, s, "f", 200)
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n, err := s.FanOut(ctxT(t), 7, now, func(batch []store.Event) []store.NewDelivery {
					mu.Lock()
					for _, e := range batch {
						seen[e.Seq]++
					}
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("%d events fanned out, want 200", len(seen))
	}
	for seq, n := range seen {
		if n != 1 {
			t.Fatalf("event %d fanned out %d times", seq, n)
		}
	}
}
