package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Capacity: rejections, the waitlist in arrival order, no oversell under
// concurrency, promotion when capacity grows.

func testReject(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(2), "")
	out := mustApply(t, s, sub("f", "a", 1, "p1"), sub("f", "b", 2, "p2"), sub("f", "c", 3, "p3"))
	if got := statuses(out); !slices.Equal(got, []string{"stored", "stored", "rejected"}) {
		t.Fatalf("statuses %v", got)
	}
	// The rejected person holds no claim: once a place frees, they get it.
	mustCancel(t, s, "f", out[0].ID)
	if o := mustApply(t, s, sub("f", "c2", 4, "p3"))[0]; o.Status != store.StatusStored {
		t.Fatalf("rejected person registering again: %+v", o)
	}
}

func testWaitlist(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	first := mustApply(t, s, sub("f", "a", 1, "p1"))[0]
	// Decided out of arrival order: seq 9 before seq 5.
	late := mustApply(t, s, sub("f", "late", 9, "p9"))[0]
	early := mustApply(t, s, sub("f", "early", 5, "p5"))[0]
	if late.Status != store.StatusWaitlisted || early.Status != store.StatusWaitlisted {
		t.Fatalf("waitlist %+v %+v", late, early)
	}
	// A waitlisted participant is live: registering again is a duplicate.
	if o := mustApply(t, s, sub("f", "again", 10, "p5"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("waitlisted participant again: %+v", o)
	}
	promoted := mustCancel(t, s, "f", first.ID)
	if !slices.Equal(promoted, []string{early.ID}) {
		t.Fatalf("promoted %v, want the earliest arrival %s", promoted, early.ID)
	}
	if o, _, _ := s.Outcome(ctxT(t), "f", "early"); o.Status != store.StatusStored || o.Decision != store.StatusWaitlisted {
		t.Fatalf("promoted entry %+v: status stored, decision still waitlisted", o)
	}
	// Cancelling a waitlisted entry frees no place.
	if promoted, err := s.Cancel(ctxT(t), "f", late.ID); err != nil || len(promoted) != 0 {
		t.Fatalf("cancel waitlisted: %v %v", promoted, err)
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != 1 || c.Waitlisted != 0 || c.Left() != 0 {
		t.Fatalf("capacity %+v", c)
	}
}

// testWaitlistSharedSeqs: waitlisted entries sharing a seq are promoted
// by id, whatever the order they were decided in (see store.Cursor).
func testWaitlistSharedSeqs(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	first := mustApply(t, s, sub("f", "a", 1, "pa"))[0]
	for _, k := range []string{"z", "x", "y", "early"} {
		e := sub("f", k, 7, "p"+k)
		e.ID = "w-" + k
		if k == "early" {
			e.Seq = 5
		}
		if o := mustApply(t, s, e)[0]; o.Status != store.StatusWaitlisted {
			t.Fatalf("%s: %+v, want waitlisted", k, o)
		}
	}
	want := []string{"w-early", "w-x", "w-y", "w-z"}
	var got []string
	cancel := first.ID
	for range want {
		promoted, err := s.Cancel(ctxT(t), "f", cancel)
		if err != nil || len(promoted) != 1 {
			t.Fatalf("cancel %s: promoted %v, %v", cancel, promoted, err)
		}
		got = append(got, promoted[0])
		cancel = promoted[0]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("promoted %v, want %v", got, want)
	}
}

// testConcurrent applies from many goroutines at once, as several processor
// workers (or instances) do: places are never oversold and each participant
// is live once.
func testConcurrent(t *testing.T, s store.Store) {
	const capacity, people, workers = 25, 120, 8
	putForm(t, s, "f", intp(capacity), store.StatusWaitlisted)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < people; i += workers {
				// Every third person registers twice under two keys.
				batch := []journal.Entry{sub("f", fmt.Sprint("k", i), uint64(i*2+1), fmt.Sprint("p", i/3*3))}
				if i%2 == 0 {
					batch = append(batch, sub("f", fmt.Sprint("k", i), uint64(i*2+1), fmt.Sprint("p", i/3*3)))
				}
				out, err := s.Apply(context.Background(), batch)
				for err != nil && errors.Is(err, store.ErrUnavailable) {
					out, err = s.Apply(context.Background(), batch) // contention: try again
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, o := range out {
					if !o.Replayed {
						counts[o.Status]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	participants := (people + 2) / 3
	if counts[store.StatusStored] != capacity || counts[store.StatusWaitlisted] != participants-capacity || counts[store.StatusDuplicate] != people-participants {
		t.Fatalf("outcomes %v: want %d stored, %d waitlisted, %d duplicates", counts, capacity, participants-capacity, people-participants)
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != capacity || c.Waitlisted != participants-capacity {
		t.Fatalf("capacity %+v", c)
	}
	var stored int
	if err := s.Export(ctxT(t), "f", func(r store.Row) error {
		if r.Status == store.StatusStored {
			stored++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored != capacity {
		t.Fatalf("%d stored rows for %d places", stored, capacity)
	}
}

func testGrowth(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	out := mustApply(t, s, sub("f", "a", 1, "p1"), sub("f", "b", 2, "p2"), sub("f", "c", 3, "p3"), sub("f", "d", 4, "p4"))
	if got := statuses(out); !slices.Equal(got, []string{"stored", "waitlisted", "waitlisted", "waitlisted"}) {
		t.Fatalf("statuses %v", got)
	}
	putForm(t, s, "f", intp(3), store.StatusWaitlisted)
	for key, want := range map[string]string{"b": "stored", "c": "stored", "d": "waitlisted"} {
		if o, _, _ := s.Outcome(ctxT(t), "f", key); o.Status != want {
			t.Errorf("%s is %s after capacity grew, want %s", key, o.Status, want)
		}
	}
	putForm(t, s, "f", nil, "")
	if o, _, _ := s.Outcome(ctxT(t), "f", "d"); o.Status != store.StatusStored {
		t.Errorf("removing the limit promotes everyone; d is %s", o.Status)
	}
}

func testCancelErrors(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	if _, err := s.Cancel(ctxT(t), "f", "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel missing = %v", err)
	}
	a := mustApply(t, s, sub("f", "a", 1, "p"))[0]
	if _, err := s.Cancel(ctxT(t), "other", a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel on the wrong form = %v", err)
	}
	mustCancel(t, s, "f", a.ID)
	if _, err := s.Cancel(ctxT(t), "f", a.ID); !errors.Is(err, store.ErrNotLive) {
		t.Fatalf("cancel twice = %v", err)
	}
}

// testLimitsBelowOne: a limit of 0 or less takes or lists nothing and is
// no error, whatever the database makes of a negative LIMIT.
func testLimitsBelowOne(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	old := sub("f", "a", 1, "pa")
	old.ReceivedAt = time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	old.Data = []byte(`{"x":"needle"}`)
	mustApply(t, s, old)
	now := time.Now().UTC()
	if _, err := s.RecordArrivals(ctx, "f", store.ArrivalBatch{Reports: []store.Arrival{{Key: "never-came", StartedAt: now}}}, now); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{0, -1} {
		if n, err := s.FanOut(ctx, limit, now, func([]store.Event) []store.NewDelivery { return nil }); n != 0 || err != nil {
			t.Errorf("FanOut(%d) = %d, %v", limit, n, err)
		}
		if ds, err := s.ClaimDeliveries(ctx, "o", now, time.Minute, store.ClaimQuery{Limit: limit}); len(ds) != 0 || err != nil {
			t.Errorf("ClaimDeliveries(%d) = %v, %v", limit, ds, err)
		}
		if n, err := s.Erase(ctx, "f", now, limit); n != 0 || err != nil {
			t.Errorf("Erase(%d) = %d, %v", limit, n, err)
		}
		if found, err := s.FindEntries(ctx, [][]byte{[]byte("needle")}, limit); len(found) != 0 || err != nil {
			t.Errorf("FindEntries(%d) = %v, %v", limit, found, err)
		}
		if as, err := s.UnreceivedArrivals(ctx, "f", now.Add(-time.Hour), now.Add(time.Hour), limit); len(as) != 0 || err != nil {
			t.Errorf("UnreceivedArrivals(%d) = %v, %v", limit, as, err)
		}
		if refs, err := s.EntriesWithoutEvent(ctx, "", limit); len(refs) != 0 || err != nil {
			t.Errorf("EntriesWithoutEvent(%d) = %v, %v", limit, refs, err)
		}
	}
	// Nothing was taken: the event waits, the data stays.
	if st, err := s.DeliveryStats(ctx); err != nil || st.UnfannedEvents != 1 {
		t.Errorf("stats %+v %v, want the one event unfanned", st, err)
	}
	if found, err := s.FindEntries(ctx, [][]byte{[]byte("needle")}, 10); len(found) != 1 || err != nil {
		t.Errorf("the entry's data after erasing nothing: %v %v", found, err)
	}
}
