package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// reviewCases are the rules of review before it counts: a pending entry
// holds its place, and is approved or declined exactly once.
var reviewCases = []storeCase{
	{"ReviewPendingHoldsItsPlace", testReviewPending},
	{"ReviewOfAnOptionsPlace", testReviewOption},
	{"ReviewRacesDecideOnce", testReviewRace},
	{"ReviewDecisionReachesTheOutboxOnce", testReviewOutbox},
}

func putReviewed(t *testing.T, s store.Store, id string, capacity *int, whenFull string, places ...form.OptionPlaces) {
	t.Helper()
	rec := form.Record{ID: id, Site: "site", Source: []byte("id: " + id), Capacity: capacity, WhenFull: whenFull, Review: true}
	if len(places) > 0 {
		rec.PlaceField, rec.Places = "session", places
	}
	if err := s.PutForms(ctxT(t), []form.Record{rec}); err != nil {
		t.Fatalf("put form: %v", err)
	}
}

func testReviewPending(t *testing.T, s store.Store) {
	putReviewed(t, s, "f", intp(2), form.WhenFullWaitlist)
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pc"), sub("f", "d", 4, "pd"))
	if got := statuses(out); !slices.Equal(got, []string{"pending", "pending", "waitlisted", "waitlisted"}) {
		t.Fatalf("statuses %v: pending entries hold the places", got)
	}
	if out[0].Decision != store.StatusPending {
		t.Fatalf("decision %q", out[0].Decision)
	}
	// A pending participant is live: registering again is a duplicate.
	if o := mustApply(t, s, sub("f", "a2", 5, "pa"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("pending participant again: %+v", o)
	}
	if promoted, err := s.Review(ctxT(t), "f", out[0].ID, true); err != nil || len(promoted) != 0 {
		t.Fatalf("approve: %v %v", promoted, err)
	}
	if o := mustOutcome(t, s, "f", "a"); o.Status != store.StatusStored || o.Decision != store.StatusPending {
		t.Fatalf("approved: %+v, want stored (decided pending)", o)
	}
	for _, approve := range []bool{true, false} {
		if _, err := s.Review(ctxT(t), "f", out[0].ID, approve); !errors.Is(err, store.ErrNotPending) {
			t.Fatalf("reviewing an approved entry again (approve %v): %v, want ErrNotPending", approve, err)
		}
	}
	if _, err := s.Review(ctxT(t), "f", out[2].ID, true); !errors.Is(err, store.ErrNotPending) {
		t.Fatalf("approving a waitlisted entry: %v, want ErrNotPending", err)
	}
	if _, err := s.Review(ctxT(t), "f", "no-such-entry", true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reviewing no entry: %v, want ErrNotFound", err)
	}
	// Declining frees the place: the first waiting entry takes it, and
	// waits for review in turn.
	promoted, err := s.Review(ctxT(t), "f", out[1].ID, false)
	if err != nil || !slices.Equal(promoted, []string{out[2].ID}) {
		t.Fatalf("decline: promoted %v (%v), want %s", promoted, err, out[2].ID)
	}
	if o := mustOutcome(t, s, "f", "c"); o.Status != store.StatusPending {
		t.Fatalf("promoted on a form with review: %+v, want pending", o)
	}
	if o := mustOutcome(t, s, "f", "b"); o.Status != store.StatusDeclined {
		t.Fatalf("declined: %+v", o)
	}
	// The declined participant is free to register again.
	if o := mustApply(t, s, sub("f", "b2", 6, "pb"))[0]; o.Status != store.StatusWaitlisted {
		t.Fatalf("declined participant again: %+v, want waitlisted (a new entry)", o)
	}
	// Cancelling a pending entry frees its place too.
	if promoted, err := s.Cancel(ctxT(t), "f", out[2].ID); err != nil || !slices.Equal(promoted, []string{out[3].ID}) {
		t.Fatalf("cancel pending: promoted %v (%v), want %s", promoted, err, out[3].ID)
	}
	if h := history(t, s, out[0].ID); !slices.Equal(h, []string{"pending:pending", "approved:stored"}) {
		t.Errorf("approved entry's history %v", h)
	}
	if h := history(t, s, out[1].ID); !slices.Equal(h, []string{"pending:pending", "declined:declined"}) {
		t.Errorf("declined entry's history %v", h)
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != 2 || c.Waitlisted != 1 {
		t.Fatalf("capacity %+v: want a and d holding the places, b2 waiting", c)
	}
}

func testReviewOption(t *testing.T, s store.Store) {
	putReviewed(t, s, "f", nil, form.WhenFullReject, form.OptionPlaces{Value: "morning", Capacity: intp(1)})
	out := mustApply(t, s, sessionSub("f", "m1", 1, "morning"), sessionSub("f", "m2", 2, "morning"))
	if out[0].Status != store.StatusPending || out[1].Status != store.StatusRejected || out[1].FullOption != "morning" {
		t.Fatalf("outcomes %+v: a pending entry holds the morning's place", out)
	}
	if _, err := s.Review(ctxT(t), "f", out[0].ID, false); err != nil {
		t.Fatal(err)
	}
	if c := optionCaps(t, s, "f")["morning"]; c.Taken != 0 {
		t.Fatalf("morning after the decline %+v: want its place free", c)
	}
	if o := mustApply(t, s, sessionSub("f", "m3", 3, "morning"))[0]; o.Status != store.StatusPending {
		t.Fatalf("after the decline: %+v, want the morning's place taken again", o)
	}
}

// testReviewRace: two editors (or instances) approving and declining
// every entry at once: each entry is decided by exactly one of them.
func testReviewRace(t *testing.T, s store.Store) {
	const n = 24
	putReviewed(t, s, "f", intp(n), form.WhenFullWaitlist)
	var subs []store.Outcome
	for i := range n {
		subs = append(subs, mustApply(t, s, sub("f", fmt.Sprint("k", i), uint64(i+1), fmt.Sprint("p", i)))[0])
	}
	var approved, declined, refused atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, o := range subs {
		for _, approve := range []bool{true, false} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Review(context.Background(), "f", o.ID, approve)
				for errors.Is(err, store.ErrUnavailable) {
					_, err = s.Review(context.Background(), "f", o.ID, approve)
				}
				switch {
				case err == nil && approve:
					approved.Add(1)
				case err == nil:
					declined.Add(1)
				case errors.Is(err, store.ErrNotPending):
					refused.Add(1)
				default:
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if approved.Load()+declined.Load() != n || refused.Load() != n {
		t.Fatalf("%d approved, %d declined, %d refused: want each of %d entries decided once", approved.Load(), declined.Load(), refused.Load(), n)
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != int(approved.Load()) {
		t.Fatalf("capacity %+v: want %d places, one per approval", c, approved.Load())
	}
	var events int
	for _, o := range subs {
		for _, h := range history(t, s, o.ID) {
			if h == "approved:stored" || h == "declined:declined" {
				events++
			}
		}
	}
	if events != n {
		t.Fatalf("%d review events, want %d", events, n)
	}
}

// testReviewOutbox: a decision's event is in the outbox with the
// decision (the same transaction), once: the fan-out (which adds the
// person's mail on a form that sends confirmations) finds one approved
// and one declined event, and a decision refused as already made adds
// none. Nothing is queued while the entries are pending but their
// pending events.
func testReviewOutbox(t *testing.T, s store.Store) {
	putReviewed(t, s, "f", intp(5), form.WhenFullWaitlist)
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"))
	now := time.Now()
	if evs := fanOut(t, s, now, "email:confirm"); len(evs) != 2 || evs[0].Type != store.EventPending || evs[1].Type != store.EventPending {
		t.Fatalf("events before the decisions: %+v, want two pending", evs)
	}
	if _, err := s.Review(ctxT(t), "f", out[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Review(ctxT(t), "f", out[1].ID, false); err != nil {
		t.Fatal(err)
	}
	for _, approve := range []bool{true, false} {
		if _, err := s.Review(ctxT(t), "f", out[0].ID, approve); !errors.Is(err, store.ErrNotPending) {
			t.Fatalf("deciding again: %v", err)
		}
	}
	evs := fanOut(t, s, now, "email:confirm")
	var got []string
	for _, e := range evs {
		got = append(got, e.EntryID+" "+e.Type+" "+e.Status)
	}
	want := []string{out[0].ID + " " + store.EventApproved + " " + store.StatusStored, out[1].ID + " " + store.EventDeclined + " " + store.StatusDeclined}
	if !slices.Equal(got, want) {
		t.Fatalf("events of the decisions %v, want %v", got, want)
	}
	for i, id := range []string{out[0].ID, out[1].ID} {
		ds, _, err := s.Deliveries(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[1].Event.Type != evs[i].Type || ds[1].Endpoint != "email:confirm" {
			t.Fatalf("deliveries of %s: %+v, want its pending event's and its decision's", id, ds)
		}
	}
	if evs := fanOut(t, s, now, "email:confirm"); len(evs) != 0 {
		t.Fatalf("events after the refused decisions: %+v", evs)
	}
}
