package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Dead letters: what could not be decided, and its replays.

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

// testDeadLettersSameTime: dead letters recorded at the same time are
// listed by id.
func testDeadLettersSameTime(t *testing.T, s store.Store, _ *Clock) {
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
