// Package storetest is the conformance suite every store driver passes: the
// decision rules of package store, checked against the real database.
package storetest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Opener returns a function that opens the store on one fresh database;
// each call opens that same database again. now is the store's clock (its
// Options.Now); nil for the time of day.
type Opener func(t *testing.T, now func() time.Time) func() store.Store

// Run runs the suite.
func Run(t *testing.T, newStore Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"StoreAndLookUp", testStore},
		{"ReplaySameKey", testReplay},
		{"ReplayInsideOneBatch", testReplayInBatch},
		{"DuplicateParticipant", testDuplicate},
		{"ResendOfALiveEntry", testResend},
		{"TokenListedTwice", testTokenTwice},
		{"UniqueAnswerOnAFullForm", testUniqueAnswer},
		{"EventsWithEveryChange", testEvents},
		{"SpamAndNotSpam", testSpamReclassify},
		{"EntryPages", testEntryPages},
		{"Settings", testSettings},
		{"CapacityReject", testReject},
		{"CapacityWaitlistInArrivalOrder", testWaitlist},
		{"WaitlistSharedSeqsByID", testWaitlistSharedSeqs},
		{"Spam", testSpam},
		{"ConcurrentNoOversell", testConcurrent},
		{"DeadLetters", testDeadLetters},
		{"DeadLetterReplays", testDeadLetterReplays},
		{"FormsAndVersions", testForms},
		{"CapacityGrowthPromotes", testGrowth},
		{"CancelErrors", testCancelErrors},
		{"ExportPages", testExport},
		{"EntryPagesSharedSeqs", testEntryPagesSharedSeqs},
		{"Tokens", testTokens},
		{"EraseOldData", testErase},
		{"FindAndEraseAPerson", testFindErase},
		{"SameTimeByID", testSameTimeByID},
		{"LimitsBelowOneTakeNothing", testLimitsBelowOne},
		{"ConsoleReads", testConsole},
		{"Budgets", testBudgets},
	}
	tests = append(tests, outboxCases...)
	tests = append(tests, placeCases...)
	tests = append(tests, reviewCases...)
	tests = append(tests, draftCases...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			open := newStore(t, nil)
			s := open()
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
	// Cases about the times a store records run on a clock that moves
	// only when told.
	clocked := []struct {
		name string
		fn   func(*testing.T, store.Store, *testClock)
	}{
		{"EventTimesFromTheStoreClock", testEventTimes},
		{"DeadLettersSameTimeByID", testDeadLettersSameTime},
	}
	for _, tc := range clocked {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &testClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
			s := newStore(t, clock.Now)()
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s, clock)
		})
	}
	t.Run("Reopen", func(t *testing.T) {
		t.Parallel()
		open := newStore(t, nil)
		s := open()
		putForm(t, s, "f", intp(1), store.StatusWaitlisted)
		mustApply(t, s, sub("f", "a", 1, "p1"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open()
		defer s.Close()
		o := mustApply(t, s, sub("f", "a", 1, "p1"))[0]
		if !o.Replayed || o.Status != store.StatusStored {
			t.Fatalf("after reopen: %+v, want the stored outcome replayed", o)
		}
		if o := mustApply(t, s, sub("f", "b", 2, "p2"))[0]; o.Status != store.StatusWaitlisted {
			t.Fatalf("after reopen capacity is lost: %+v", o)
		}
	})
}

func intp(n int) *int { return &n }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var idSeq atomic.Int64

// sub makes a submission for form/key at journal position seq, claiming
// the given participant tokens.
func sub(form, key string, seq uint64, claims ...string) journal.Entry {
	return journal.Entry{
		Seq:         seq,
		ID:          fmt.Sprintf("%s-%s-%d", form, key, idSeq.Add(1)),
		Site:        "site",
		Form:        form,
		Key:         key,
		Fingerprint: sha256.Sum256([]byte(form + key)),
		ReceivedAt:  time.Now().UTC().Truncate(time.Microsecond),
		Claims:      claims,
		Data:        []byte(`{"k":"` + key + `"}`),
	}
}

func putForm(t *testing.T, s store.Store, id string, capacity *int, whenFull string) {
	t.Helper()
	wf := "reject"
	if whenFull == store.StatusWaitlisted {
		wf = "waitlist"
	}
	if err := s.PutForms(ctxT(t), []form.Record{{ID: id, Site: "site", Source: []byte("id: " + id), Capacity: capacity, WhenFull: wf}}); err != nil {
		t.Fatalf("put form: %v", err)
	}
}

func mustApply(t *testing.T, s store.Store, subs ...journal.Entry) []store.Outcome {
	t.Helper()
	out, err := s.Apply(ctxT(t), subs)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(out) != len(subs) {
		t.Fatalf("apply returned %d outcomes for %d submissions", len(out), len(subs))
	}
	return out
}

func statuses(out []store.Outcome) []string {
	s := make([]string, len(out))
	for i, o := range out {
		s[i] = o.Status
	}
	return s
}

func testStore(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	in := sub("f", "k1", 1, "p1")
	o := mustApply(t, s, in)[0]
	if o.Replayed || o.Status != store.StatusStored || o.Decision != store.StatusStored || o.ID != in.ID || o.Fingerprint != in.Fingerprint || !o.ReceivedAt.Equal(in.ReceivedAt) {
		t.Fatalf("outcome %+v", o)
	}
	got, ok, err := s.Outcome(ctxT(t), "f", "k1")
	if err != nil || !ok {
		t.Fatalf("outcome lookup: %v %v", ok, err)
	}
	if got.ID != in.ID || got.Status != store.StatusStored || got.Replayed {
		t.Fatalf("looked-up outcome %+v", got)
	}
	if _, ok, err := s.Outcome(ctxT(t), "f", "nope"); ok || err != nil {
		t.Fatalf("missing key: %v %v", ok, err)
	}
	// A form the store has no settings for has no limit.
	if o := mustApply(t, s, sub("unknown-form", "k", 2))[0]; o.Status != store.StatusStored {
		t.Fatalf("unknown form: %+v", o)
	}
}

func testReplay(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), "")
	first := sub("f", "k", 1, "p1")
	o1 := mustApply(t, s, first)[0]
	again := first
	again.ID = "another-id"
	o2 := mustApply(t, s, again)[0]
	if !o2.Replayed || o2.ID != o1.ID || o2.Decision != o1.Decision {
		t.Fatalf("replay %+v, want the first outcome %+v replayed", o2, o1)
	}
	// A replay takes no place: another person still finds the form full.
	if o := mustApply(t, s, sub("f", "k2", 2, "p2"))[0]; o.Status != store.StatusRejected {
		t.Fatalf("second person %+v, want rejected", o)
	}
	// And a rejection is replayed as a rejection.
	if o := mustApply(t, s, sub("f", "k2", 2, "p2"))[0]; !o.Replayed || o.Decision != store.StatusRejected {
		t.Fatalf("replayed rejection %+v", o)
	}
}

func testReplayInBatch(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	a := sub("f", "k", 1, "p")
	out := mustApply(t, s, a, a, sub("f", "k2", 2, "p"))
	if out[0].Replayed || !out[1].Replayed || out[1].ID != out[0].ID || out[2].Status != store.StatusDuplicate {
		t.Fatalf("batch outcomes %+v", out)
	}
}

func testDuplicate(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	first := mustApply(t, s, sub("f", "a", 1, "phone-1", "email-1"))[0]
	out := mustApply(t, s,
		sub("f", "b", 2, "phone-1"),            // same phone
		sub("f", "c", 3, "phone-2", "email-1"), // same e-mail, other phone
		sub("f", "d", 4, "phone-2"),            // phone-2 must be free: c was refused
		sub("g", "e", 5, "phone-1"),            // another form
	)
	want := []string{store.StatusDuplicate, store.StatusDuplicate, store.StatusStored, store.StatusStored}
	if got := statuses(out); !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if _, err := s.Cancel(ctxT(t), "f", first.ID); err != nil {
		t.Fatal(err)
	}
	if o := mustApply(t, s, sub("f", "f", 6, "phone-1"))[0]; o.Status != store.StatusStored {
		t.Fatalf("after cancel the participant may register again: %+v", o)
	}
	if o, _, _ := s.Outcome(ctxT(t), "f", "a"); o.Status != store.StatusCancelled || o.Decision != store.StatusStored {
		t.Fatalf("cancelled entry %+v: kept, status cancelled, decision unchanged", o)
	}
}

// testResend: a new key with exactly the content of the live entry that
// holds its claim is a resend of that entry (SameAs), decided duplicate;
// other content from the same participant is a plain duplicate.
func testResend(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	first := mustApply(t, s, sub("f", "a", 1, "phone-1"))[0]
	again := sub("f", "b", 2, "phone-1")
	again.Fingerprint = first.Fingerprint
	other := sub("f", "c", 3, "phone-1")
	out := mustApply(t, s, again, other)
	if o := out[0]; o.Decision != store.StatusDuplicate || o.SameAs == nil || o.SameAs.ID != first.ID || o.SameAs.Key != "a" ||
		o.SameAs.Decision != store.StatusStored || !o.SameAs.ReceivedAt.Equal(first.ReceivedAt) {
		t.Fatalf("resend: %+v (same as %+v), want duplicate answered as %+v", o, o.SameAs, first)
	}
	if o := out[1]; o.Decision != store.StatusDuplicate || o.SameAs != nil {
		t.Fatalf("other content: %+v, want a plain duplicate", o)
	}
	// The resend takes no place: a second person is waitlisted.
	if o := mustApply(t, s, sub("f", "d", 4, "phone-2"))[0]; o.Status != store.StatusWaitlisted {
		t.Fatalf("after a resend the only place is still taken: %+v", o)
	}
	for _, o := range []store.Outcome{mustApply(t, s, again)[0], mustOutcome(t, s, "f", "b")} {
		if o.SameAs == nil || o.SameAs.ID != first.ID {
			t.Fatalf("the resend read again: %+v, want it answered as %s", o, first.ID)
		}
	}
}

// testUniqueAnswer pins each edge of unique_answer: on a full form that
// rejects, a registered participant's new key is decided rejected (as
// anyone new) under generic, the default, and duplicate under duplicate;
// a resend stays a duplicate answered as the holder; a form with places
// left or a waitlist answers duplicate either way.
func testUniqueAnswer(t *testing.T, s store.Store) {
	put := func(id string, capacity int, whenFull, answer string) {
		t.Helper()
		if err := s.PutForms(ctxT(t), []form.Record{{ID: id, Site: "site", Source: []byte("id: " + id), Capacity: intp(capacity),
			WhenFull: whenFull, UniqueAnswer: answer}}); err != nil {
			t.Fatalf("put form: %v", err)
		}
	}
	put("g", 1, "reject", "")
	put("d", 1, "reject", form.UniqueAnswerDuplicate)
	put("w", 1, "waitlist", form.UniqueAnswerGeneric)
	put("o", 2, "reject", form.UniqueAnswerGeneric)
	for _, tc := range []struct{ form, want string }{
		{"g", store.StatusRejected}, {"d", store.StatusDuplicate}, {"w", store.StatusDuplicate}, {"o", store.StatusDuplicate},
	} {
		first := mustApply(t, s, sub(tc.form, "a", 1, "phone-1"))[0]
		if first.Status != store.StatusStored {
			t.Fatalf("%s: first entry %+v, want stored", tc.form, first)
		}
		if tc.form == "w" {
			// Full: the next new participant waits.
			if o := mustApply(t, s, sub(tc.form, "x", 2, "phone-9"))[0]; o.Status != store.StatusWaitlisted {
				t.Fatalf("w: %+v, want waitlisted", o)
			}
		}
		again := sub(tc.form, "b", 3, "phone-1")
		resend := sub(tc.form, "c", 4, "phone-1")
		resend.Fingerprint = first.Fingerprint
		out := mustApply(t, s, again, resend)
		if o := out[0]; o.Decision != tc.want || o.Status != tc.want || o.SameAs != nil {
			t.Errorf("%s: the registered participant's new key: %+v, want %s", tc.form, o, tc.want)
		}
		if o := out[1]; o.Decision != store.StatusDuplicate || o.SameAs == nil || o.SameAs.ID != first.ID {
			t.Errorf("%s: the resend: %+v (same as %+v), want a duplicate answered as %s", tc.form, o, o.SameAs, first.ID)
		}
		if o := mustApply(t, s, again)[0]; !o.Replayed || o.Decision != tc.want {
			t.Errorf("%s: the key again: %+v, want %s replayed", tc.form, o, tc.want)
		}
		if o := mustOutcome(t, s, tc.form, "b"); o.Decision != tc.want {
			t.Errorf("%s: the key's outcome read: %+v, want %s", tc.form, o, tc.want)
		}
	}
	// The rejected new key took neither the claim nor a place: once the
	// holder is cancelled, the participant gets the place.
	holder := mustOutcome(t, s, "g", "a")
	if _, err := s.Cancel(ctxT(t), "g", holder.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if o := mustApply(t, s, sub("g", "e", 5, "phone-1"))[0]; o.Status != store.StatusStored {
		t.Fatalf("g after the holder left: %+v, want stored", o)
	}
	// Full again: a new participant and a registered one are told alike.
	if o := mustApply(t, s, sub("g", "f", 6, "phone-2"))[0]; o.Status != store.StatusRejected {
		t.Fatalf("g full, a new participant: %+v, want rejected", o)
	}
	if o := mustApply(t, s, sub("g", "h", 7, "phone-1"))[0]; o.Status != store.StatusRejected {
		t.Fatalf("g full, the registered participant: %+v, want rejected", o)
	}
}

// testTokenTwice: an entry whose claims list one token twice (a form that
// names the same unique set twice) is one participant, stored, not a
// duplicate of itself; so is a spam entry decided again as not spam.
func testTokenTwice(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	o := mustApply(t, s, sub("f", "a", 1, "p", "q", "p"))[0]
	if o.Status != store.StatusStored || o.SameAs != nil {
		t.Fatalf("claims listing p twice: %+v (same as %+v), want stored", o, o.SameAs)
	}
	if o := mustApply(t, s, sub("f", "b", 2, "p"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("the participant again: %+v, want a duplicate", o)
	}
	spam := sub("f", "c", 3, "r", "r")
	spam.Spam = true
	sp := mustApply(t, s, spam)[0]
	if o, err := s.NotSpam(ctxT(t), "f", sp.ID); err != nil || o.Status != store.StatusStored || o.SameAs != nil {
		t.Fatalf("not spam with r listed twice: %+v %v, want stored", o, err)
	}
	if got := history(t, s, sp.ID); !slices.Equal(got, []string{"spam:spam", "stored:stored"}) {
		t.Fatalf("history of the entry not spam: %v", got)
	}
}

func mustOutcome(t *testing.T, s store.Store, form, key string) store.Outcome {
	t.Helper()
	o, ok, err := s.Outcome(ctxT(t), form, key)
	if err != nil || !ok {
		t.Fatalf("outcome %s/%s: %v (found %v)", form, key, err, ok)
	}
	return o
}

// testSettings: the first value stored under a name wins.
func testSettings(t *testing.T, s store.Store) {
	got, err := s.PutSetting(ctxT(t), "x", []byte("one"))
	if err != nil || string(got) != "one" {
		t.Fatalf("first put: %q %v", got, err)
	}
	got, err = s.PutSetting(ctxT(t), "x", []byte("two"))
	if err != nil || string(got) != "one" {
		t.Fatalf("second put: %q %v, want the first value kept", got, err)
	}
}

func testReject(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(2), "")
	out := mustApply(t, s, sub("f", "a", 1, "p1"), sub("f", "b", 2, "p2"), sub("f", "c", 3, "p3"))
	if got := statuses(out); !slices.Equal(got, []string{"stored", "stored", "rejected"}) {
		t.Fatalf("statuses %v", got)
	}
	// The rejected person holds no claim: once a place frees, they get it.
	if _, err := s.Cancel(ctxT(t), "f", out[0].ID); err != nil {
		t.Fatal(err)
	}
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
	promoted, err := s.Cancel(ctxT(t), "f", first.ID)
	if err != nil {
		t.Fatal(err)
	}
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

// testEventTimes: every event takes its time from the store's clock, the
// promotions a cancel or a larger capacity makes included.
func testEventTimes(t *testing.T, s store.Store, clock *testClock) {
	ctx := ctxT(t)
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	decided := clock.Now()
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pc"))
	clock.Advance(time.Hour)
	cancelled := clock.Now()
	if _, err := s.Cancel(ctx, "f", out[0].ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	grown := clock.Now()
	putForm(t, s, "f", intp(2), store.StatusWaitlisted)
	for _, tc := range []struct {
		id   string
		want []time.Time
	}{
		{out[0].ID, []time.Time{decided, cancelled}},
		{out[1].ID, []time.Time{decided, cancelled}},
		{out[2].ID, []time.Time{decided, grown}},
	} {
		evs, err := s.History(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		for _, e := range evs {
			got = append(got, e.At.UTC())
		}
		if !slices.EqualFunc(got, tc.want, time.Time.Equal) {
			t.Errorf("event times of %s: %v, want %v (history %+v)", tc.id, got, tc.want, evs)
		}
	}
}

func testSpam(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), "")
	sp := sub("f", "s", 1, "p1")
	sp.Spam = true
	if o := mustApply(t, s, sp)[0]; o.Status != store.StatusSpam {
		t.Fatalf("spam %+v", o)
	}
	if o := mustApply(t, s, sub("f", "real", 2, "p1"))[0]; o.Status != store.StatusStored {
		t.Fatalf("spam must take neither the claim nor the place: %+v", o)
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

func testDeadLetters(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	bad := sub("f", "bad", 1, "p1")
	o, err := s.DeadLetter(ctxT(t), bad, "cannot decode", 5)
	if err != nil || o.Status != store.StatusDeadLettered || o.Replayed {
		t.Fatalf("dead letter: %+v %v", o, err)
	}
	if o := mustApply(t, s, bad)[0]; !o.Replayed || o.Decision != store.StatusDeadLettered {
		t.Fatalf("a dead-lettered key replays its outcome: %+v", o)
	}
	dls, err := s.DeadLetters(ctxT(t), 10)
	if err != nil || len(dls) != 1 || dls[0].Reason != "cannot decode" || dls[0].Attempts != 5 || dls[0].Key != "bad" {
		t.Fatalf("dead letters %+v %v", dls, err)
	}
	// A key decided meanwhile is not overwritten.
	good := sub("f", "good", 2, "p2")
	mustApply(t, s, good)
	if o, err := s.DeadLetter(ctxT(t), good, "late failure", 5); err != nil || !o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("dead-lettering a decided key: %+v %v", o, err)
	}
	ok, err := s.ForgetDeadLetter(ctxT(t), "f", "bad")
	if err != nil || !ok {
		t.Fatalf("forget: %v %v", ok, err)
	}
	if dls, _ := s.DeadLetters(ctxT(t), 10); len(dls) != 0 {
		t.Fatalf("dead letters after forget: %+v", dls)
	}
	if o := mustApply(t, s, bad)[0]; o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("retried entry %+v", o)
	}
	if ok, err := s.ForgetDeadLetter(ctxT(t), "f", "good"); ok || err != nil {
		t.Fatalf("forgetting a stored entry must do nothing: %v %v", ok, err)
	}
}

// testDeadLetterReplays: recording a dead letter again (the processor
// after a crash, or the journal and the processor both) gives back the
// first outcome, never a second record and never an error, also for an
// entry whose id another key's entry holds, which no decision can store.
func testDeadLetterReplays(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	bad := sub("f", "bad", 1, "p1")
	first, err := s.DeadLetter(ctx, bad, "cannot decode", 5)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.DeadLetter(ctx, bad, "still cannot decode", 7)
	if err != nil || !again.Replayed || again.ID != first.ID || again.Key != "bad" || again.Decision != store.StatusDeadLettered ||
		again.Status != store.StatusDeadLettered || !again.ReceivedAt.Equal(first.ReceivedAt) || again.Fingerprint != first.Fingerprint {
		t.Fatalf("dead-lettering again: %+v %v, want %+v replayed", again, err, first)
	}
	held := mustApply(t, s, sub("f", "held", 2, "p2"))[0]

	// Journal entries reusing the id of a stored entry, of a dead letter,
	// and of an entry of another form: the store refuses to decide them
	// (not as unavailable: they fail on their own and are dead-lettered).
	reuse := func(id, form, key string, seq uint64) journal.Entry {
		e := sub(form, key, seq)
		e.ID = id
		return e
	}
	for _, tc := range []struct {
		name  string
		entry journal.Entry
		want  store.Outcome
	}{
		{"a stored entry's id", reuse(held.ID, "f", "other-1", 3), held},
		{"a dead letter's id", reuse(first.ID, "f", "other-2", 4), first},
		{"an id of another form", reuse(held.ID, "g", "other-3", 5), held},
	} {
		if _, err := s.Apply(ctx, []journal.Entry{tc.entry}); err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("deciding an entry that reuses %s = %v, want an error of the entry's own", tc.name, err)
		}
		o, err := s.DeadLetter(ctx, tc.entry, "reused id", 5)
		if err != nil || !o.Replayed || o.ID != tc.want.ID || o.Form != tc.want.Form || o.Key != tc.want.Key || o.Status != tc.want.Status {
			t.Fatalf("dead-lettering an entry that reuses %s: %+v %v, want %+v replayed", tc.name, o, err, tc.want)
		}
		if _, ok, err := s.Outcome(ctx, tc.entry.Form, tc.entry.Key); ok || err != nil {
			t.Fatalf("an entry reusing %s got an outcome of its own (%v)", tc.name, err)
		}
	}
	dls, err := s.DeadLetters(ctx, 10)
	if err != nil || len(dls) != 1 || dls[0].ID != first.ID || dls[0].Reason != "cannot decode" || dls[0].Attempts != 5 {
		t.Fatalf("dead letters %+v %v, want only the first record", dls, err)
	}
}

func testForms(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	forms, v0, err := s.Forms(ctx, 0)
	if err != nil || len(forms) != 0 {
		t.Fatalf("empty store forms: %v %v", forms, err)
	}
	putForm(t, s, "a", intp(3), store.StatusWaitlisted)
	putForm(t, s, "b", nil, "")
	forms, v1, err := s.Forms(ctx, v0)
	if err != nil || len(forms) != 2 || v1 <= v0 {
		t.Fatalf("forms %+v version %d→%d: %v", forms, v0, v1, err)
	}
	if forms[0].ID != "a" || *forms[0].Capacity != 3 || forms[0].WhenFull != "waitlist" || string(forms[0].Source) != "id: a" || forms[1].Capacity != nil {
		t.Fatalf("forms %+v", forms)
	}
	if again, v, err := s.Forms(ctx, v1); err != nil || len(again) != 0 || v != v1 {
		t.Fatalf("nothing changed since %d: %+v %d %v", v1, again, v, err)
	}
	putForm(t, s, "b", intp(1), "")
	changed, v2, err := s.Forms(ctx, v1)
	if err != nil || len(changed) != 1 || changed[0].ID != "b" || v2 <= v1 {
		t.Fatalf("changed %+v %d %v", changed, v2, err)
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
	if _, err := s.Cancel(ctxT(t), "f", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctxT(t), "f", a.ID); !errors.Is(err, store.ErrNotLive) {
		t.Fatalf("cancel twice = %v", err)
	}
}

// sharedSeqs makes n entries of form f whose journal positions come three
// to a seq, as entries from two journals do (see store.Cursor), in an
// order where neither the order of deciding nor the ids alone give the
// arrival order: they are decided last first, and within a seq the ids
// sort as neither. It decides them and returns them in (seq, id) order.
func sharedSeqs(t *testing.T, s store.Store, f string, n int) []journal.Entry {
	t.Helper()
	putForm(t, s, f, nil, "")
	batch := make([]journal.Entry, 0, n)
	for i := range n {
		j := n - 1 - i
		e := sub(f, fmt.Sprint("k", j), uint64(j/3+1))
		e.ID = fmt.Sprintf("%s-%c-%05d", f, "bac"[j%3], j)
		batch = append(batch, e)
	}
	mustApply(t, s, batch...)
	slices.SortFunc(batch, func(a, b journal.Entry) int {
		if a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return batch
}

func ids(es []journal.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// testExport: every entry of the form once, in (seq, id) order, also when
// entries sharing a seq straddle a page (the boundaries after ExportPage
// and 2*ExportPage rows fall inside a group of three).
func testExport(t *testing.T, s store.Store) {
	want := ids(sharedSeqs(t, s, "f", 2*store.ExportPage+4))
	mustApply(t, s, sub("other", "x", 5), sub("other", "y", uint64(store.ExportPage/3)))
	var got []string
	err := s.Export(ctxT(t), "f", func(r store.Row) error {
		if r.Form != "f" || len(r.Data) == 0 || r.ReceivedAt.IsZero() || r.Key == "" {
			return fmt.Errorf("row %+v", r)
		}
		got = append(got, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		seen := map[string]int{}
		for _, id := range got {
			seen[id]++
		}
		var twice, missing []string
		for _, id := range want {
			switch seen[id] {
			case 0:
				missing = append(missing, id)
			case 1:
			default:
				twice = append(twice, id)
			}
		}
		t.Fatalf("exported %d of %d entries; missing %v, twice %v (or out of (seq, id) order)", len(got), len(want), missing, twice)
	}
}

// testEntryPagesSharedSeqs: pages of one and of two entries, newest first,
// go through entries that share a seq without skipping or repeating one.
func testEntryPagesSharedSeqs(t *testing.T, s store.Store) {
	want := ids(sharedSeqs(t, s, "f", 8))
	slices.Reverse(want)
	for _, limit := range []int{1, 2, 3} {
		var got []string
		q := store.EntryQuery{Form: "f", Limit: limit}
		for range 20 {
			page, err := s.Entries(ctxT(t), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			if len(page) < limit {
				break
			}
			last := page[len(page)-1]
			q.Before = store.Cursor{Seq: last.Seq, ID: last.ID}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
}

func testTokens(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	h1 := sha256.Sum256([]byte("one"))
	h2 := sha256.Sum256([]byte("two"))
	h0 := sha256.Sum256([]byte("never received"))
	if ok, err := s.PutToken(ctx, "admin", h0[:], true); !ok || err != nil {
		t.Fatalf("first token: %v %v", ok, err)
	}
	// Issued once: a second instance, or a restart, issues nothing, and
	// the first token keeps working even if nobody used it yet.
	if ok, err := s.PutToken(ctx, "admin", h1[:], true); ok || err != nil {
		t.Fatalf("a second issue must not replace the token: %v %v", ok, err)
	}
	if ok, _ := s.TokenValid(ctx, h1[:]); ok {
		t.Fatal("the token not issued must not be valid")
	}
	if ok, _ := s.TokenValid(ctx, h0[:]); !ok {
		t.Fatal("the first token must stay valid")
	}
	// formd token replaces it.
	if ok, err := s.PutToken(ctx, "admin", h2[:], false); !ok || err != nil {
		t.Fatalf("rotate: %v %v", ok, err)
	}
	if ok, _ := s.TokenValid(ctx, h0[:]); ok {
		t.Fatal("a rotated-out token must not be valid")
	}
	if ok, _ := s.TokenValid(ctx, h2[:]); !ok {
		t.Fatal("token two must be valid")
	}
}

func testErase(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	now := time.Now().UTC().Truncate(time.Microsecond)
	var batch []journal.Entry
	for i := range 5 {
		sub := sub("f", fmt.Sprint("old", i), uint64(i+1), fmt.Sprint("p", i))
		sub.ReceivedAt = now.Add(-48 * time.Hour)
		batch = append(batch, sub)
	}
	batch = append(batch, sub("f", "new", 10, "p-new"), sub("g", "other-form", 11))
	batch[len(batch)-1].ReceivedAt = now.Add(-48 * time.Hour)
	mustApply(t, s, batch...)
	cutoff := now.Add(-24 * time.Hour)
	ctx := ctxT(t)
	if n, err := s.Erase(ctx, "f", cutoff, 3); err != nil || n != 3 {
		t.Fatalf("first erase: %d %v, want 3 (the limit)", n, err)
	}
	if n, err := s.Erase(ctx, "f", cutoff, 100); err != nil || n != 2 {
		t.Fatalf("second erase: %d %v, want the 2 left", n, err)
	}
	if n, err := s.Erase(ctx, "f", cutoff, 100); err != nil || n != 0 {
		t.Fatalf("erase again: %d %v, want nothing", n, err)
	}
	data := map[string]string{}
	if err := s.Export(ctx, "f", func(r store.Row) error {
		data[r.Key] = string(r.Data)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k, d := range data {
		old := strings.HasPrefix(k, "old")
		if old && d != "" || !old && d == "" {
			t.Errorf("%s: data %q after erasing before the cutoff", k, d)
		}
	}
	// The rows stay: a retry of an erased key is still a replay. The
	// participant's claim, derived from the erased data, is gone with it.
	if o := mustApply(t, s, batch[0])[0]; !o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("replay of an erased entry: %+v", o)
	}
	if o := mustApply(t, s, sub("f", "again", 20, "p0"))[0]; o.Status != store.StatusStored {
		t.Fatalf("the erased entry's participant again: %+v, want stored (the claim went with the data)", o)
	}
	// Another form is untouched.
	n := 0
	s.Export(ctx, "g", func(r store.Row) error {
		if len(r.Data) > 0 {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("another form's data was erased")
	}
}

// testFindErase: entries are found across forms by a value in their data,
// and erased by id: data and claims go, the rows stay.
func testFindErase(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	putForm(t, s, "g", nil, "")
	a := sub("f", "a", 1, "ann-claim")
	a.Data = []byte(`{"email":"ann@example.org","name":"Ann"}`)
	b := sub("g", "b", 2, "ann-claim")
	b.Data = []byte(`{"contact":"ann@example.org"}`)
	c := sub("f", "c", 3, "bo-claim")
	c.Data = []byte(`{"email":"joann@example.org"}`)
	mustApply(t, s, a, b, c)
	found, err := s.FindEntries(ctx, [][]byte{[]byte(`"ann@example.org"`)}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].ID != a.ID || found[1].ID != b.ID || found[0].Form != "f" || found[1].Key != "b" || found[0].Site != "site" {
		t.Fatalf("found %+v, want a and b (not joann)", found)
	}
	n, err := s.EraseEntries(ctx, []string{a.ID, b.ID})
	if err != nil || n != 2 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if n, err := s.EraseEntries(ctx, []string{a.ID, b.ID}); err != nil || n != 0 {
		t.Fatalf("erase again: %d %v, want nothing left to erase", n, err)
	}
	if found, _ := s.FindEntries(ctx, [][]byte{[]byte(`"ann@example.org"`)}, 10); len(found) != 0 {
		t.Fatalf("found after erasure: %+v", found)
	}
	if o := mustOutcome(t, s, "f", "a"); o.Status != store.StatusStored || o.ID != a.ID {
		t.Fatalf("the erased row must stay: %+v", o)
	}
	if o := mustApply(t, s, sub("f", "a2", 4, "ann-claim"))[0]; o.Status != store.StatusStored {
		t.Fatalf("the erased person's claim still holds: %+v", o)
	}
	if o := mustApply(t, s, sub("f", "c2", 5, "bo-claim"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("another person's claim was released: %+v", o)
	}
}

// testSameTimeByID: entries received at the same instant are found and
// erased oldest first by id, whatever the order they were decided in.
func testSameTimeByID(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	at := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	for _, k := range []string{"c", "a", "b"} {
		e := sub("f", k, 1, "p"+k)
		e.ID = "same-" + k
		e.ReceivedAt = at
		e.Data = []byte(`{"x":"needle"}`)
		mustApply(t, s, e)
	}
	found, err := s.FindEntries(ctx, [][]byte{[]byte("needle")}, 2)
	if err != nil || len(found) != 2 || found[0].ID != "same-a" || found[1].ID != "same-b" {
		t.Fatalf("found %+v %v, want same-a and same-b", found, err)
	}
	if n, err := s.Erase(ctx, "f", at.Add(time.Second), 1); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	found, err = s.FindEntries(ctx, [][]byte{[]byte("needle")}, 10)
	if err != nil || len(found) != 2 || found[0].ID != "same-b" || found[1].ID != "same-c" {
		t.Fatalf("after erasing one: %+v %v, want same-a erased", found, err)
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

// testDeadLettersSameTime: dead letters recorded at the same time are
// listed by id.
func testDeadLettersSameTime(t *testing.T, s store.Store, _ *testClock) {
	putForm(t, s, "f", nil, "")
	for _, k := range []string{"c", "a", "b"} {
		e := sub("f", k, 1)
		e.ID = "dl-" + k
		if _, err := s.DeadLetter(ctxT(t), e, "bad", 5); err != nil {
			t.Fatal(err)
		}
	}
	dls, err := s.DeadLetters(ctxT(t), 10)
	var got []string
	for _, d := range dls {
		got = append(got, d.ID)
	}
	if err != nil || !slices.Equal(got, []string{"dl-a", "dl-b", "dl-c"}) {
		t.Fatalf("dead letters %v %v, want dl-a, dl-b, dl-c", got, err)
	}
}

// history is the types of an entry's events, "type:status" each.
func history(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	evs, err := s.History(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = strings.TrimPrefix(e.Type, "submission.") + ":" + e.Status
		if e.ID() == "" || e.Form == "" || e.Site != "site" || e.At.IsZero() {
			t.Fatalf("event %+v lacks its id, form, site or time", e)
		}
	}
	return out
}

// testEvents: each decision that makes or changes an entry writes its
// event in the same transaction; replays and refusals write none.
func testEvents(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pa"))
	spam := sub("f", "d", 4, "pd")
	spam.Spam = true
	spamOut := mustApply(t, s, spam)[0]
	mustApply(t, s, sub("f", "a", 1, "pa")) // a replay
	for id, want := range map[string][]string{
		out[0].ID:  {"stored:stored"},
		out[1].ID:  {"waitlisted:waitlisted"},
		out[2].ID:  nil, // a duplicate is no entry
		spamOut.ID: {"spam:spam"},
	} {
		if got := history(t, s, id); !slices.Equal(got, want) {
			t.Fatalf("history of %s: %v, want %v", id, got, want)
		}
	}
	if _, err := s.Cancel(ctxT(t), "f", out[0].ID); err != nil {
		t.Fatal(err)
	}
	if got := history(t, s, out[0].ID); !slices.Equal(got, []string{"stored:stored", "cancelled:cancelled"}) {
		t.Fatalf("after cancel: %v", got)
	}
	if got := history(t, s, out[1].ID); !slices.Equal(got, []string{"waitlisted:waitlisted", "promoted:stored"}) {
		t.Fatalf("after promotion: %v", got)
	}
	evs, _ := s.History(ctxT(t), out[1].ID)
	if evs[0].ID() == evs[1].ID() || evs[0].Seq >= evs[1].Seq {
		t.Fatalf("event ids and order: %+v", evs)
	}
}

// testSpamReclassify: an owner's "not spam" decides a spam entry again as
// a real submission; "spam" takes a live one out and frees its place.
func testSpamReclassify(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	bot := sub("f", "bot", 1, "p-bot")
	bot.Spam = true
	person := sub("f", "person", 2, "p-person")
	person.Spam = true
	outs := mustApply(t, s, bot, person)
	o, err := s.NotSpam(ctx, "f", outs[1].ID)
	if err != nil || o.Status != store.StatusStored || o.Decision != store.StatusStored || o.Key != "person" {
		t.Fatalf("not spam: %+v %v, want stored", o, err)
	}
	if got := mustOutcome(t, s, "f", "person"); got.Decision != store.StatusStored || got.Status != store.StatusStored {
		t.Fatalf("the key's outcome after not spam: %+v", got)
	}
	if _, err := s.NotSpam(ctx, "f", outs[1].ID); !errors.Is(err, store.ErrNotSpam) {
		t.Fatalf("not spam twice: %v, want ErrNotSpam", err)
	}
	// The only place is taken now: the next real submission waits.
	if o := mustApply(t, s, sub("f", "later", 3, "p-later"))[0]; o.Status != store.StatusWaitlisted {
		t.Fatalf("after not spam the place is taken: %+v", o)
	}
	promoted, err := s.MarkSpam(ctx, "f", outs[1].ID)
	if err != nil || len(promoted) != 1 {
		t.Fatalf("mark spam: %v %v, want the waitlisted entry promoted", promoted, err)
	}
	if got := mustOutcome(t, s, "f", "person"); got.Status != store.StatusSpam || got.Decision != store.StatusSpam {
		t.Fatalf("after mark spam: %+v", got)
	}
	if got := history(t, s, outs[1].ID); !slices.Equal(got, []string{"spam:spam", "stored:stored", "cancelled:spam"}) {
		t.Fatalf("history: %v", got)
	}
	// Its participant is free again.
	if o := mustApply(t, s, sub("f", "again", 4, "p-person"))[0]; o.Status == store.StatusDuplicate {
		t.Fatalf("after mark spam the claim still holds: %+v", o)
	}
	if _, err := s.MarkSpam(ctx, "f", outs[0].ID); !errors.Is(err, store.ErrNotLive) {
		t.Fatalf("mark spam of spam: %v, want ErrNotLive", err)
	}
	if _, err := s.NotSpam(ctx, "f", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("not spam of no entry: %v", err)
	}
}

// testEntryPages: a form's entries newest first, filtered by status and
// time, a page at a time by keyset.
func testEntryPages(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	base := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	var batch []journal.Entry
	for i := range 7 {
		e := sub("f", fmt.Sprint("k", i), uint64(i+1))
		e.ReceivedAt = base.Add(time.Duration(i) * time.Minute)
		e.Spam = i%3 == 0 // k0, k3, k6
		batch = append(batch, e)
	}
	batch = append(batch, sub("g", "other", 100))
	mustApply(t, s, batch...)
	var keys []string
	q := store.EntryQuery{Form: "f", Limit: 3}
	for {
		page, err := s.Entries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			keys = append(keys, r.Key)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.Before = store.Cursor{Seq: last.Seq, ID: last.ID}
	}
	if want := []string{"k6", "k5", "k4", "k3", "k2", "k1", "k0"}; !slices.Equal(keys, want) {
		t.Fatalf("pages: %v, want %v", keys, want)
	}
	spam, err := s.Entries(ctx, store.EntryQuery{Form: "f", Statuses: []string{store.StatusSpam}})
	if err != nil || len(spam) != 3 || spam[0].Key != "k6" || spam[0].Status != store.StatusSpam || len(spam[0].Data) == 0 {
		t.Fatalf("spam: %+v %v", spam, err)
	}
	window, err := s.Entries(ctx, store.EntryQuery{Form: "f", Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)})
	if err != nil || len(window) != 2 || window[0].Key != "k3" || window[1].Key != "k2" {
		t.Fatalf("time window: %+v %v", window, err)
	}
}
