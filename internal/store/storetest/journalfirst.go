package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// The decision checks what intake no longer asks the store before the
// journal (DESIGN invariant 12, issue 28): the uploads an entry names with
// their fields (journal.Entry.Uploads) and its proof-of-work solution
// (journal.Entry.Challenge).

// checkedUploads is a submission naming the uploads with their fields,
// as intake journals it today.
func checkedUploads(form, key string, seq uint64, field string, ids ...string) journal.Entry {
	e := withUploads(form, key, seq, ids...)
	for _, id := range ids {
		e.Uploads = append(e.Uploads, journal.Upload{ID: id, Field: field})
	}
	return e
}

// testUploadChecked: each refusal is decided with its code and field
// (Outcome.Detail), as intake's check answered, and a retry of its key
// gets the same; a good upload is claimed.
func testUploadChecked(t *testing.T, s UploadStore) {
	putForm(t, s, "f", intp(1), store.StatusRejected)
	incomplete := newUpload(t, s, "f", false)
	otherForm := newUpload(t, s, "g", true)
	claimed := newUpload(t, s, "f", true)
	if o := mustApply(t, s, checkedUploads("f", "holder", 1, "photo", claimed.ID))[0]; o.Status != store.StatusStored {
		t.Fatalf("the first entry naming an upload: %+v", o)
	}
	expired := newUpload(t, s, "f", true)
	late := checkedUploads("f", "late", 9, "photo", expired.ID)
	late.ReceivedAt = expired.ExpiresAt.Add(time.Second)
	good := newUpload(t, s, "f", true)
	for _, tc := range []struct {
		name   string
		e      journal.Entry
		status string
		detail string
	}{
		{"incomplete", checkedUploads("f", "a", 2, "photo", incomplete.ID), store.StatusUploadMissing, "upload-incomplete:photo"},
		{"of another form", checkedUploads("f", "b", 3, "photo", otherForm.ID), store.StatusUploadMissing, "upload-not-found:photo"},
		{"of another field", checkedUploads("f", "c", 4, "scan", good.ID), store.StatusUploadMissing, "upload-not-found:scan"},
		{"unknown", checkedUploads("f", "d", 5, "photo", "no-such-upload"), store.StatusUploadMissing, "upload-not-found:photo"},
		{"claimed by another entry", checkedUploads("f", "e", 6, "photo", claimed.ID), store.StatusUploadUsed, "upload-already-used:photo"},
		{"expired when the entry came", late, store.StatusUploadMissing, "upload-not-found:photo"},
		{"a good one after a refused one", checkedUploads("f", "g", 7, "photo", good.ID, incomplete.ID), store.StatusUploadMissing, "upload-incomplete:photo"},
	} {
		o := mustApply(t, s, tc.e)[0]
		if o.Status != tc.status || o.Decision != tc.status || o.Detail != tc.detail {
			t.Errorf("%s: %+v, want %s %s", tc.name, o, tc.status, tc.detail)
		}
		again := tc.e
		again.ID += "-retry"
		if r := mustApply(t, s, again)[0]; !r.Replayed || r.Status != tc.status || r.Detail != tc.detail {
			t.Errorf("%s, a retry of the key: %+v", tc.name, r)
		}
		if r, ok, err := s.Outcome(ctxT(t), tc.e.Form, tc.e.Key); err != nil || !ok || r.Detail != tc.detail {
			t.Errorf("%s, the outcome read back: %+v %v %v", tc.name, r, ok, err)
		}
	}
	if got := mustUpload(t, s, good.ID); got.Entry != "" {
		t.Fatalf("a refused entry kept its claim on %s: %s", good.ID, got.Entry)
	}
	// The form's one place went to the holder: none of the refused took
	// one. A new form's good upload is claimed.
	putForm(t, s, "h", nil, store.StatusRejected)
	hu := newUpload(t, s, "h", true)
	if o := mustApply(t, s, checkedUploads("h", "a", 10, "photo", hu.ID))[0]; o.Status != store.StatusStored || o.Detail != "" || mustUpload(t, s, hu.ID).Entry == "" {
		t.Fatalf("a complete upload of its field: %+v", o)
	}
}

// testChallengeSpentByDecision: the first key to be decided with a
// solution holds it, a retry of that key is the same claim, another key
// with it is spam (challenge-replayed) or, where the form refuses,
// challenge-invalid — which takes no place and gives back its uploads.
// A solution spent at intake by an earlier release is respected; an entry
// journaled by one (no Challenge) spends nothing.
func testChallengeSpentByDecision(t *testing.T, s UploadStore) {
	ch, ok := s.(store.Challenges)
	if !ok {
		t.Skip("the driver keeps no proof-of-work replay store")
	}
	putForm(t, s, "f", intp(2), store.StatusRejected)
	exp := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Microsecond)
	solved := func(e journal.Entry, sig string, refuse bool) journal.Entry {
		e.Challenge = &journal.Challenge{Signature: sig, Expires: exp, Refuse: refuse}
		return e
	}
	first := solved(sub("f", "k1", 1), "sig1", true)
	if o := mustApply(t, s, first)[0]; o.Status != store.StatusStored {
		t.Fatalf("the first key with a solution: %+v", o)
	}
	again := first
	again.ID += "-retry"
	if o := mustApply(t, s, again)[0]; !o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("a retry of the key: %+v", o)
	}
	// The replay store says the same: sig1 is k1's.
	if spent, err := ch.SpendChallenge(ctxT(t), store.ChallengeUse{Signature: "sig1", Form: "f", Key: "k1", Expires: exp}, time.Now()); err != nil || !spent {
		t.Fatalf("sig1 as k1's: %v %v", spent, err)
	}
	kept := solved(sub("f", "k2", 2), "sig1", false)
	if o := mustApply(t, s, kept)[0]; o.Status != store.StatusSpam || o.Decision != store.StatusSpam {
		t.Fatalf("another key with a spent solution, a form that keeps: %+v", o)
	}
	if r, err := ch.SpamReason(ctxT(t), "f", "k2"); err != nil || r != store.SpamChallengeReplayed {
		t.Fatalf("its reason: %q %v", r, err)
	}
	up := newUpload(t, s, "f", true)
	refused := solved(checkedUploads("f", "k3", 3, "photo", up.ID), "sig1", true)
	if o := mustApply(t, s, refused)[0]; o.Status != store.StatusChallengeInvalid || o.Decision != store.StatusChallengeInvalid {
		t.Fatalf("another key with a spent solution, a form that refuses: %+v", o)
	}
	if got := mustUpload(t, s, up.ID); got.Entry != "" {
		t.Fatalf("a refused entry kept its upload: %s", got.Entry)
	}
	refused.ID += "-retry"
	if o := mustApply(t, s, refused)[0]; !o.Replayed || o.Status != store.StatusChallengeInvalid {
		t.Fatalf("a retry of the refused key: %+v", o)
	}
	// Spent at intake by an earlier release: refused by the decision too.
	if spent, err := ch.SpendChallenge(ctxT(t), store.ChallengeUse{Signature: "sig-old", Form: "f", Key: "old", Expires: exp}, time.Now()); err != nil || !spent {
		t.Fatalf("spend at intake: %v %v", spent, err)
	}
	if o := mustApply(t, s, solved(sub("f", "k4", 4), "sig-old", true))[0]; o.Status != store.StatusChallengeInvalid {
		t.Fatalf("a solution an earlier release spent at intake: %+v", o)
	}
	// The entry an earlier release journaled (spent at intake, no
	// Challenge): decided as before, and the second place is its.
	if o := mustApply(t, s, sub("f", "old", 5))[0]; o.Status != store.StatusStored {
		t.Fatalf("an entry of an earlier release: %+v", o)
	}
	// Spam and refusals took no place: the form is full now.
	if o := mustApply(t, s, solved(sub("f", "k5", 6), "sig5", true))[0]; o.Status != store.StatusRejected {
		t.Fatalf("the third entry on a form of two places: %+v", o)
	}
	// Intake's spam reason goes with the decision.
	honey := sub("f", "k6", 7)
	honey.Spam, honey.SpamReason = true, "honeypot"
	if o := mustApply(t, s, honey)[0]; o.Status != store.StatusSpam {
		t.Fatalf("honeypot spam: %+v", o)
	}
	if r, err := ch.SpamReason(ctxT(t), "f", "k6"); err != nil || r != "honeypot" {
		t.Fatalf("the honeypot's reason: %q %v", r, err)
	}
}

// posted is a submission naming, in field photo, the files of a plain
// HTML post that intake kept without a record (journal.Posted) and
// possibly other uploads (ids).
func posted(form, key string, seq uint64, files map[string]string, ids ...string) journal.Entry {
	e := withUploads(form, key, seq, ids...)
	for _, id := range ids {
		up := journal.Upload{ID: id, Field: "photo"}
		if content, ok := files[id]; ok {
			sum := sha256.Sum256([]byte(content))
			up.Posted = &journal.Posted{Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), Type: "image/png",
				Name: id + ".png", Expires: e.ReceivedAt.Add(24 * time.Hour)}
		}
		e.Uploads = append(e.Uploads, up)
	}
	return e
}

// testPostedRecordedByDecision: a plain HTML post's file has no record
// before its entry's decision, which records it from the entry's facts
// and claims it in one transaction; another entry naming it finds it
// used; an entry refused for another of its uploads leaves it recorded,
// unclaimed, to expire.
func testPostedRecordedByDecision(t *testing.T, s UploadStore) {
	putForm(t, s, "pf", nil, store.StatusRejected)
	files := map[string]string{"posted-1": "one", "posted-2": "two"}
	if _, err := s.Upload(ctxT(t), "posted-1"); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("a posted file before its decision: %v", err)
	}
	first := posted("pf", "a", 1, files, "posted-1")
	if o := mustApply(t, s, first)[0]; o.Status != store.StatusStored {
		t.Fatalf("the post's decision: %+v", o)
	}
	u := mustUpload(t, s, "posted-1")
	want := sha256.Sum256([]byte("one"))
	if !u.Complete || u.SHA256 != want || u.Size != 3 || u.Type != "image/png" || u.Name != "posted-1.png" ||
		u.Field != "photo" || u.Form != "pf" || u.Entry != first.ID || !u.ExpiresAt.Equal(first.Uploads[0].Posted.Expires) {
		t.Fatalf("the posted file as recorded: %+v", u)
	}
	again := first
	again.ID += "-retry"
	if o := mustApply(t, s, again)[0]; !o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("the post sent again: %+v", o)
	}
	if o := mustApply(t, s, posted("pf", "b", 2, files, "posted-1"))[0]; o.Status != store.StatusUploadUsed || o.Detail != "upload-already-used:photo" {
		t.Fatalf("another entry naming the posted file: %+v", o)
	}
	if o := mustApply(t, s, posted("pf", "c", 3, files, "posted-2", "no-such-upload"))[0]; o.Status != store.StatusUploadMissing || o.Detail != "upload-not-found:photo" {
		t.Fatalf("a post refused for its other upload: %+v", o)
	}
	if u := mustUpload(t, s, "posted-2"); !u.Complete || u.Entry != "" {
		t.Fatalf("the refused post's file: %+v, want recorded and unclaimed", u)
	}
	if o := mustApply(t, s, posted("pf", "d", 4, files, "posted-2"))[0]; o.Status != store.StatusStored || mustUpload(t, s, "posted-2").Entry == "" {
		t.Fatalf("the refused post sent again under a new key: %+v", o)
	}
}

// testDecisionsPruneSpent: a spent solution whose challenge expired is
// kept through its grace (another key with it is a replay) and then
// pruned by the decisions that spend others, however they pace it.
func testDecisionsPruneSpent(t *testing.T, s store.Store, clock *Clock) {
	if _, ok := s.(store.Challenges); !ok {
		t.Skip("the driver keeps no proof-of-work replay store")
	}
	putForm(t, s, "pp", nil, store.StatusRejected)
	solved := func(key string, seq uint64, sig string) journal.Entry {
		e := sub("pp", key, seq)
		e.ReceivedAt = clock.Now()
		e.Challenge = &journal.Challenge{Signature: sig, Expires: clock.Now().Add(time.Minute)}
		return e
	}
	decide := func(e journal.Entry, want string) {
		t.Helper()
		out, err := s.Apply(ctxT(t), []journal.Entry{e})
		if err != nil || out[0].Status != want {
			t.Fatalf("%s with %s: %+v %v, want %s", e.Key, e.Challenge.Signature, out, err, want)
		}
	}
	decide(solved("k1", 1, "old"), store.StatusStored)
	clock.Advance(30 * time.Second)
	decide(solved("k2", 2, "old"), store.StatusSpam)
	clock.Advance(30*time.Second + store.ChallengeGrace - time.Second)
	decide(solved("k3", 3, "old"), store.StatusSpam) // within the grace
	clock.Advance(2 * time.Second)
	decide(solved("k4", 4, "fresh"), store.StatusStored) // prunes "old"
	decide(solved("k5", 5, "old"), store.StatusStored)
}
