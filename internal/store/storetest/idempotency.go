package storetest

import (
	"crypto/sha256"
	"slices"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// The rule of one outcome per (form, key) and one entry per participant:
// replays, duplicates, unique answers and tokens.

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
	mustCancel(t, s, "f", first.ID)
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
	mustCancel(t, s, "g", holder.ID)
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
