package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// placeCases are the rules of options with places of their own (a
// select field's sessions, DESIGN §5): each option's places guarded as
// the form's are, each option's waitlist served in arrival order.
var placeCases = []storeCase{
	{"OptionPlacesRejectNamesTheOption", testOptionReject},
	{"OptionWaitlistsInArrivalOrder", testOptionWaitlists},
	{"OptionPlacesBesideTheFormsCapacity", testOptionBesideForm},
	{"OptionCapacityGrowthPromotes", testOptionGrowth},
	{"ConcurrentOptionsNoOversellPromotedOnce", testOptionConcurrent},
	{"UniqueAnswerOnAFullOption", testOptionUniqueAnswer},
	{"PlacesCountedEntryByEntry", testPlacesCounted},
}

// putSessions declares form id with a select field "session" whose
// options have the given places (nil: no limit of its own), in the
// order given.
func putSessions(t *testing.T, s store.Store, id string, capacity *int, whenFull string, places ...form.OptionPlaces) {
	t.Helper()
	if err := s.PutForms(ctxT(t), []form.Record{{ID: id, Site: "site", Source: []byte("id: " + id), Capacity: capacity,
		WhenFull: whenFull, PlaceField: "session", Places: places}}); err != nil {
		t.Fatalf("put form: %v", err)
	}
}

// sessionSub is sub choosing a session ("" for none).
func sessionSub(form, key string, seq uint64, session string) journal.Entry {
	e := sub(form, key, seq, "p-"+key)
	if session != "" {
		e.Data = []byte(fmt.Sprintf(`{"k":%q,"session":%q}`, key, session))
	}
	return e
}

func optionCaps(t *testing.T, s store.Store, formID string) map[string]store.Capacity {
	t.Helper()
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return caps[formID].Options
}

func testOptionReject(t *testing.T, s store.Store) {
	putSessions(t, s, "f", nil, form.WhenFullReject,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(2)},
		form.OptionPlaces{Value: "evening"})
	out := mustApply(t, s, sessionSub("f", "m1", 1, "morning"), sessionSub("f", "m2", 2, "morning"),
		sessionSub("f", "a1", 3, "afternoon"), sessionSub("f", "e1", 4, "evening"), sessionSub("f", "none", 5, ""))
	if got := statuses(out); !slices.Equal(got, []string{"stored", "rejected", "stored", "stored", "stored"}) {
		t.Fatalf("statuses %v", got)
	}
	if out[1].FullOption != "morning" || out[0].FullOption != "" || out[2].FullOption != "" {
		t.Fatalf("full options %q %q %q: want only the rejection to name morning", out[0].FullOption, out[1].FullOption, out[2].FullOption)
	}
	// The answer is frozen: a retry and a read name the option again.
	if o := mustApply(t, s, sessionSub("f", "m2", 2, "morning"))[0]; !o.Replayed || o.FullOption != "morning" {
		t.Fatalf("replayed rejection %+v: want morning named", o)
	}
	if o := mustOutcome(t, s, "f", "m2"); o.FullOption != "morning" {
		t.Fatalf("read rejection %+v: want morning named", o)
	}
	if r, ok := s.(store.OutcomesReader); ok {
		outs, err := r.Outcomes(ctxT(t), []store.Key{{Form: "f", Key: "m2"}, {Form: "f", Key: "m1"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if want := map[string]string{"m2": "morning"}[o.Key]; o.FullOption != want {
				t.Fatalf("batch read of %s: %+v, want full option %q", o.Key, o, want)
			}
		}
	}
	// A rejected participant holds nothing: registering again for a
	// session with places is not a duplicate.
	again := sessionSub("f", "m2-again", 6, "afternoon")
	again.Claims = []string{"p-m2"}
	if o := mustApply(t, s, again)[0]; o.Status != store.StatusStored {
		t.Fatalf("rejected participant for another session: %+v", o)
	}
	opts := optionCaps(t, s, "f")
	if c := opts["morning"]; c.Taken != 1 || c.Left() != 0 {
		t.Fatalf("morning %+v", c)
	}
	if c := opts["afternoon"]; c.Taken != 2 || c.Left() != 0 {
		t.Fatalf("afternoon %+v", c)
	}
	if c := opts["evening"]; c.Taken != 1 || c.Limit != nil || c.Left() != -1 {
		t.Fatalf("evening (no limit of its own) %+v", c)
	}
}

func testOptionWaitlists(t *testing.T, s store.Store) {
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
	m1 := mustApply(t, s, sessionSub("f", "m1", 1, "morning"))[0]
	a1 := mustApply(t, s, sessionSub("f", "a1", 2, "afternoon"))[0]
	// Decided out of arrival order: seq 9 before seq 5.
	a2 := mustApply(t, s, sessionSub("f", "a2", 4, "afternoon"))[0]
	m3 := mustApply(t, s, sessionSub("f", "m3", 9, "morning"))[0]
	m2 := mustApply(t, s, sessionSub("f", "m2", 5, "morning"))[0]
	for _, o := range []store.Outcome{a2, m3, m2} {
		if o.Status != store.StatusWaitlisted || o.FullOption != "" {
			t.Fatalf("%s: %+v, want waitlisted", o.Key, o)
		}
	}
	if c := optionCaps(t, s, "f")["morning"]; c.Taken != 1 || c.Waitlisted != 2 {
		t.Fatalf("morning %+v: want 1 taken, 2 waiting", c)
	}
	// The morning's place goes to the morning's earliest arrival, not to
	// the afternoon's (which arrived earlier still).
	promoted := mustCancel(t, s, "f", m1.ID)
	if !slices.Equal(promoted, []string{m2.ID}) {
		t.Fatalf("promoted %v, want the morning's earliest arrival %s", promoted, m2.ID)
	}
	if promoted, err := s.Cancel(ctxT(t), "f", a1.ID); err != nil || !slices.Equal(promoted, []string{a2.ID}) {
		t.Fatalf("afternoon promoted %v (%v), want %s", promoted, err, a2.ID)
	}
	// Cancelling a waitlisted entry frees no place.
	if promoted, err := s.Cancel(ctxT(t), "f", m3.ID); err != nil || len(promoted) != 0 {
		t.Fatalf("cancel waitlisted: %v %v", promoted, err)
	}
	opts := optionCaps(t, s, "f")
	for _, v := range []string{"morning", "afternoon"} {
		if c := opts[v]; c.Taken != 1 || c.Waitlisted != 0 {
			t.Fatalf("%s %+v: want 1 taken, none waiting", v, c)
		}
	}
	if h := history(t, s, m2.ID); !slices.Contains(h, "promoted:stored") {
		t.Fatalf("promoted entry's history %v", h)
	}
	// Marking a stored entry spam frees its option's place too.
	if promoted, err := s.MarkSpam(ctxT(t), "f", m2.ID); err != nil || len(promoted) != 0 {
		t.Fatalf("mark spam: %v %v, want nobody promoted (nobody waits for the morning)", promoted, err)
	}
	if c := optionCaps(t, s, "f")["morning"]; c.Taken != 0 {
		t.Fatalf("morning after spam %+v: want its place free", c)
	}
}

func testOptionBesideForm(t *testing.T, s store.Store) {
	putSessions(t, s, "f", intp(2), form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(2)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
	out := mustApply(t, s, sessionSub("f", "a1", 1, "afternoon"), sessionSub("f", "a2", 2, "afternoon"),
		sessionSub("f", "m1", 3, "morning"), sessionSub("f", "m2", 4, "morning"))
	// a2: the afternoon is full (the form is not); m2: the form is full
	// (the morning is not). Both wait.
	if got := statuses(out); !slices.Equal(got, []string{"stored", "waitlisted", "stored", "waitlisted"}) {
		t.Fatalf("statuses %v", got)
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != 2 || c.Waitlisted != 2 || c.Options["morning"].Taken != 1 || c.Options["afternoon"].Taken != 1 {
		t.Fatalf("capacity %+v", c)
	}
	// The morning entry frees a form place: a2 arrived first but its
	// afternoon is still full, so m2 takes it.
	promoted := mustCancel(t, s, "f", out[2].ID)
	if !slices.Equal(promoted, []string{out[3].ID}) {
		t.Fatalf("promoted %v, want %s (a2's option is full)", promoted, out[3].ID)
	}
	// The afternoon entry frees both: a2 takes them.
	if promoted, err := s.Cancel(ctxT(t), "f", out[0].ID); err != nil || !slices.Equal(promoted, []string{out[1].ID}) {
		t.Fatalf("promoted %v (%v), want %s", promoted, err, out[1].ID)
	}
	// With the form's capacity reached, reject refuses by the form: no
	// option named.
	putSessions(t, s, "f", intp(2), form.WhenFullReject,
		form.OptionPlaces{Value: "morning", Capacity: intp(2)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
	if o := mustApply(t, s, sessionSub("f", "m3", 5, "morning"))[0]; o.Status != store.StatusRejected || o.FullOption != "" {
		t.Fatalf("full form: %+v, want rejected without an option", o)
	}
}

func testOptionGrowth(t *testing.T, s store.Store) {
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
	out := mustApply(t, s, sessionSub("f", "m1", 1, "morning"), sessionSub("f", "m2", 2, "morning"),
		sessionSub("f", "m3", 3, "morning"), sessionSub("f", "a1", 4, "afternoon"), sessionSub("f", "a2", 5, "afternoon"))
	if got := statuses(out); !slices.Equal(got, []string{"stored", "waitlisted", "waitlisted", "stored", "waitlisted"}) {
		t.Fatalf("statuses %v", got)
	}
	// The morning grows by one: its first waiting entry is promoted, the
	// afternoon's is not.
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(2)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
	for key, want := range map[string]string{"m2": "stored", "m3": "waitlisted", "a2": "waitlisted"} {
		if o := mustOutcome(t, s, "f", key); o.Status != want {
			t.Errorf("%s is %s after the morning grew, want %s", key, o.Status, want)
		}
	}
	// An option the definition no longer limits has no limit.
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(2)}, form.OptionPlaces{Value: "afternoon"})
	if o := mustOutcome(t, s, "f", "a2"); o.Status != store.StatusStored {
		t.Errorf("a2 is %s once the afternoon has no limit, want stored", o.Status)
	}
}

// testOptionConcurrent: many deciders at once on two sessions never put
// an option above its places, and cancellations at once promote each
// waiting entry once, each session's in arrival order.
func testOptionConcurrent(t *testing.T, s store.Store) {
	const places, people, workers = 6, 60, 8
	sessions := []string{"morning", "afternoon"}
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(places)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(places)})
	apply := func(batch []journal.Entry) ([]store.Outcome, error) {
		out, err := s.Apply(context.Background(), batch)
		for err != nil && errors.Is(err, store.ErrUnavailable) {
			out, err = s.Apply(context.Background(), batch) // contention: try again
		}
		return out, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		byKey = map[string]store.Outcome{}
		errs  = make(chan error, workers*2)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < people; i += workers {
				out, err := apply([]journal.Entry{sessionSub("f", fmt.Sprint("k", i), uint64(i+1), sessions[i%2])})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				byKey[out[0].Key] = out[0]
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	stored := map[string][]store.Outcome{}
	for i := range people {
		o := byKey[fmt.Sprint("k", i)]
		if o.Status == store.StatusStored {
			stored[sessions[i%2]] = append(stored[sessions[i%2]], o)
		}
	}
	for _, v := range sessions {
		if len(stored[v]) != places {
			t.Fatalf("%s: %d stored, want exactly %d", v, len(stored[v]), places)
		}
	}
	// Cancel every stored entry at once: each frees one place, which
	// goes to one waiting entry of its session.
	promotedBy := map[string]string{}
	for _, v := range sessions {
		for _, o := range stored[v] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := s.Cancel(context.Background(), "f", o.ID)
				for err != nil && errors.Is(err, store.ErrUnavailable) {
					p, err = s.Cancel(context.Background(), "f", o.ID)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range p {
					if other, twice := promotedBy[id]; twice {
						errs <- fmt.Errorf("%s promoted twice (by cancelling %s and %s)", id, other, o.ID)
					}
					promotedBy[id] = o.ID
				}
			}()
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if len(promotedBy) != 2*places {
		t.Fatalf("%d promoted, want %d (one per cancellation)", len(promotedBy), 2*places)
	}
	// Each session's promoted entries are its earliest waiting arrivals.
	for si, v := range sessions {
		var want []string
		for i := si; i < people && len(want) < places; i += 2 {
			if o := byKey[fmt.Sprint("k", i)]; o.Status == store.StatusWaitlisted {
				want = append(want, o.ID)
			}
		}
		for _, id := range want {
			if _, ok := promotedBy[id]; !ok {
				t.Errorf("%s: %s waited among the first %d but was not promoted", v, id, places)
			}
		}
	}
	opts := optionCaps(t, s, "f")
	for _, v := range sessions {
		if c := opts[v]; c.Taken != places || c.Waitlisted != people/2-2*places {
			t.Errorf("%s %+v: want %d taken, %d waiting", v, c, places, people/2-2*places)
		}
	}
	var live = map[string]int{}
	if err := s.Export(ctxT(t), "f", func(r store.Row) error {
		if r.Status == store.StatusStored {
			var d struct{ Session string }
			if err := json.Unmarshal(r.Data, &d); err != nil {
				return err
			}
			live[d.Session]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, v := range sessions {
		if live[v] != places {
			t.Errorf("%s: %d stored entries exported, want %d", v, live[v], places)
		}
	}
}

// testOptionUniqueAnswer: on a form that turns people away with
// unique_answer generic, a registered participant's new key for a full
// session is answered as anyone new (rejected, naming it); for a session
// with places, and under duplicate, it is a duplicate.
func testOptionUniqueAnswer(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		answer, full string
	}{{form.UniqueAnswerGeneric, store.StatusRejected}, {form.UniqueAnswerDuplicate, store.StatusDuplicate}} {
		id := "f-" + tc.answer
		if err := s.PutForms(ctxT(t), []form.Record{{ID: id, Site: "site", Source: []byte("id: " + id), WhenFull: form.WhenFullReject,
			UniqueAnswer: tc.answer, PlaceField: "session",
			Places: []form.OptionPlaces{{Value: "morning", Capacity: intp(1)}, {Value: "afternoon", Capacity: intp(1)}}}}); err != nil {
			t.Fatal(err)
		}
		if o := mustApply(t, s, sessionSub(id, "ann", 1, "morning"))[0]; o.Status != store.StatusStored {
			t.Fatalf("%s: first %+v", tc.answer, o)
		}
		again := sessionSub(id, "ann-again", 2, "morning")
		again.Claims = []string{"p-ann"}
		o := mustApply(t, s, again)[0]
		if o.Status != tc.full || (tc.full == store.StatusRejected) != (o.FullOption == "morning") {
			t.Fatalf("%s: the registered participant's new key for the full morning: %+v, want %s", tc.answer, o, tc.full)
		}
		if r := mustOutcome(t, s, id, "ann-again"); r.FullOption != o.FullOption {
			t.Fatalf("%s: read back %+v, want the answer's option %q", tc.answer, r, o.FullOption)
		}
		other := sessionSub(id, "ann-pm", 3, "afternoon")
		other.Claims = []string{"p-ann"}
		if o := mustApply(t, s, other)[0]; o.Status != store.StatusDuplicate {
			t.Fatalf("%s: the registered participant for a session with places: %+v, want duplicate", tc.answer, o)
		}
	}
}

// testPlacesCounted: CountPlaces counts each option's entries one by one
// (stored, waitlisted) beside its counter and capacity, and the counts
// follow a cancellation's promotion; an option without a limit is counted
// too.
func testPlacesCounted(t *testing.T, s store.Store) {
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "evening"})
	m1 := mustApply(t, s, sessionSub("f", "m1", 1, "morning"), sessionSub("f", "m2", 2, "morning"), sessionSub("f", "m3", 3, "morning"),
		sessionSub("f", "e1", 4, "evening"))[0]
	count := func() map[string]store.PlaceCount {
		t.Helper()
		cs, err := s.CountPlaces(ctxT(t), "f")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]store.PlaceCount{}
		for _, c := range cs {
			out[c.Value] = c
		}
		return out
	}
	c := count()
	if m := c["morning"]; m.Capacity == nil || *m.Capacity != 1 || m.Taken != 1 || m.Stored != 1 || m.Waitlisted != 2 || m.Counted() != 1 {
		t.Fatalf("morning %+v: want capacity 1, taken 1, 1 stored, 2 waiting", m)
	}
	if e := c["evening"]; e.Capacity != nil || e.Taken != 1 || e.Stored != 1 || e.Waitlisted != 0 {
		t.Fatalf("evening %+v: want no limit, 1 stored", e)
	}
	mustCancel(t, s, "f", m1.ID)
	if m := count()["morning"]; m.Taken != 1 || m.Stored != 1 || m.Waitlisted != 1 {
		t.Fatalf("after a cancellation, morning %+v: want 1 stored (promoted), 1 waiting", m)
	}
	if cs, err := s.CountPlaces(ctxT(t), "nosuchform"); err != nil || len(cs) != 0 {
		t.Fatalf("a form without places: %v %v", cs, err)
	}
}
