package storetest

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// draftCases are the rules of drafts (store.Drafts).
var draftCases = []storeCase{
	{"DraftVersionsAndTokens", testDraftVersions},
	{"DraftConsumedByTheDecision", testDraftConsumed},
	{"DraftTakesNoPlace", testDraftNoPlace},
	{"DraftExpiryAndErasure", testDraftExpiry},
	{"WaitlistPosition", testWaitlistPosition},
}

func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

func save(t *testing.T, s store.Store, p store.DraftSave) (store.Draft, error) {
	t.Helper()
	if p.Form == "" {
		p.Form = "f"
	}
	if p.Site == "" {
		p.Site = "site"
	}
	if p.TTL == 0 {
		p.TTL = time.Hour
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	return s.SaveDraft(ctxT(t), p)
}

func testDraftVersions(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	a := tokenHash("a")
	d, err := save(t, s, store.DraftSave{Key: "k", TokenHash: a, Data: []byte(`{"name":"Ann"}`)})
	if err != nil || d.Version != 1 {
		t.Fatalf("create: %+v %v", d, err)
	}
	// A second creation under the key, with another token, changes nothing.
	if _, err := save(t, s, store.DraftSave{Key: "k", TokenHash: tokenHash("b"), Data: []byte(`{}`)}); !errors.Is(err, store.ErrDraftExists) {
		t.Fatalf("second create: %v, want ErrDraftExists", err)
	}
	if d, err = save(t, s, store.DraftSave{Key: "k", TokenHash: a, Version: 1, Data: []byte(`{"name":"Anna"}`)}); err != nil || d.Version != 2 {
		t.Fatalf("save v1: %+v %v", d, err)
	}
	// The older tab, still at version 1, is told the current version.
	_, err = save(t, s, store.DraftSave{Key: "k", TokenHash: a, Version: 1, Data: []byte(`{"name":"old"}`)})
	if st, ok := store.AsStaleDraft(err); !ok || st.Current != 2 || !errors.Is(err, store.ErrDraftStale) {
		t.Fatalf("stale save: %v, want current 2", err)
	}
	// Another token is the same as no draft.
	if _, err := save(t, s, store.DraftSave{Key: "k", TokenHash: tokenHash("b"), Version: 2, Data: []byte(`{}`)}); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("save with another token: %v", err)
	}
	for _, tc := range []struct {
		name, key string
		hash      []byte
		want      error
	}{
		{"by key", "k", a, nil},
		{"by token alone", "", a, nil},
		{"another token", "k", tokenHash("b"), store.ErrDraftNotFound},
		{"another key", "other", a, store.ErrDraftNotFound},
	} {
		got, err := s.Draft(ctxT(t), "f", tc.key, tc.hash, time.Now())
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.want == nil && (got.Key != "k" || got.Version != 2 || string(got.Data) != `{"name":"Anna"}`) {
			t.Fatalf("%s: %+v", tc.name, got)
		}
	}
	if _, err := s.Draft(ctxT(t), "other-form", "k", a, time.Now()); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("another form: %v", err)
	}
}

func testDraftConsumed(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	a := tokenHash("a")
	if _, err := save(t, s, store.DraftSave{Key: "k", TokenHash: a, Data: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	o := mustApply(t, s, sub("f", "k", 1, "p1"))[0]
	if o.Status != store.StatusStored {
		t.Fatalf("decision %+v", o)
	}
	// The draft went with the decision: reading or saving it names the
	// entry's status.
	_, err := s.Draft(ctxT(t), "f", "k", a, time.Now())
	if sd, ok := store.AsSubmittedDraft(err); !ok || sd.Status != store.StatusStored {
		t.Fatalf("read after the decision: %v", err)
	}
	if _, err := s.Draft(ctxT(t), "f", "", a, time.Now()); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("read by token after the decision: %v", err)
	}
	for _, v := range []int64{0, 1} {
		_, err := save(t, s, store.DraftSave{Key: "k", TokenHash: a, Version: v, Data: []byte(`{}`)})
		if sd, ok := store.AsSubmittedDraft(err); !ok || sd.Status != store.StatusStored || !errors.Is(err, store.ErrDraftSubmitted) {
			t.Fatalf("save (version %d) after the decision: %v", v, err)
		}
	}
	// A rejected decision consumes it too, and the status says so.
	putForm(t, s, "g", intp(0), "")
	if _, err := save(t, s, store.DraftSave{Form: "g", Key: "k", TokenHash: tokenHash("g"), Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, sub("g", "k", 2))
	if _, err := s.Draft(ctxT(t), "g", "k", tokenHash("g"), time.Now()); !errors.Is(err, store.ErrDraftSubmitted) {
		t.Fatalf("read after a rejection: %v", err)
	}
}

func testDraftNoPlace(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), "")
	for i, k := range []string{"d1", "d2", "d3"} {
		if _, err := save(t, s, store.DraftSave{Key: k, TokenHash: tokenHash(k), Data: []byte(`{"phone":"1"}`)}); err != nil {
			t.Fatalf("draft %d: %v", i, err)
		}
	}
	caps, err := s.Capacities(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != 0 || c.Waitlisted != 0 {
		t.Fatalf("drafts took places: %+v", c)
	}
	// The one place and the participant are there for a submission.
	if o := mustApply(t, s, sub("f", "other", 1, "p1"))[0]; o.Status != store.StatusStored {
		t.Fatalf("decision beside drafts: %+v", o)
	}
	if counts, err := s.CountByStatus(ctxT(t), "f"); err != nil || counts[store.StatusStored] != 1 || len(counts) != 1 {
		t.Fatalf("counts %v %v", counts, err)
	}
}

func testDraftExpiry(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	t0 := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := save(t, s, store.DraftSave{Key: "old", TokenHash: tokenHash("old"), Data: []byte(`{}`), Now: t0, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := save(t, s, store.DraftSave{Key: "new", TokenHash: tokenHash("new"), Data: []byte(`{}`), Now: t0, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := save(t, s, store.DraftSave{Key: "ann", TokenHash: tokenHash("ann"), Data: []byte(`{"email":"ann@example.org"}`), Now: t0, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(2 * time.Minute)
	// Expired is gone for reads and saves before retention deletes it.
	if _, err := s.Draft(ctxT(t), "f", "old", tokenHash("old"), later); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("expired read: %v", err)
	}
	if _, err := save(t, s, store.DraftSave{Key: "old", TokenHash: tokenHash("old"), Version: 1, Data: []byte(`{}`), Now: later}); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("expired save: %v", err)
	}
	if n, err := s.ExpireDrafts(ctxT(t), later, 0); n != 0 || err != nil {
		t.Fatalf("limit 0: %d %v", n, err)
	}
	if n, err := s.ExpireDrafts(ctxT(t), later, 10); n != 1 || err != nil {
		t.Fatalf("expire: %d %v, want 1", n, err)
	}
	// The key is free for a new draft once the old one expired.
	if d, err := save(t, s, store.DraftSave{Key: "old", TokenHash: tokenHash("old2"), Data: []byte(`{}`), Now: later}); err != nil || d.Version != 1 {
		t.Fatalf("create after expiry: %+v %v", d, err)
	}
	found, err := s.FindDrafts(ctxT(t), [][]byte{[]byte(`"ann@example.org"`), []byte(`"nobody"`)}, 10)
	if err != nil || len(found) != 1 || found[0] != (store.DraftRef{Form: "f", Key: "ann", Site: "site"}) {
		t.Fatalf("find: %+v %v", found, err)
	}
	if n, err := s.EraseDrafts(ctxT(t), append(found, store.DraftRef{Form: "f", Key: "gone"})); n != 1 || err != nil {
		t.Fatalf("erase: %d %v, want 1", n, err)
	}
	if _, err := s.Draft(ctxT(t), "f", "ann", tokenHash("ann"), t0); !errors.Is(err, store.ErrDraftNotFound) {
		t.Fatalf("erased read: %v", err)
	}
	if _, err := s.Draft(ctxT(t), "f", "new", tokenHash("new"), t0); err != nil {
		t.Fatalf("a draft neither expired nor erased: %v", err)
	}
}

func testWaitlistPosition(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pc"), sub("f", "d", 4, "pd"))
	want := []int{0, 1, 2, 3}
	// Entries decided now are answered with their link, and so are
	// their replays (store.Outcome.Linked).
	again := mustApply(t, s, sub("f", "a", 1, "pa"))[0]
	if o := mustOutcome(t, s, "f", "b"); !out[0].Linked || !again.Replayed || !again.Linked || !o.Linked {
		t.Fatalf("linked: decided %v, replayed %+v, read %+v", out[0].Linked, again, o)
	}
	for i, o := range out {
		n, err := s.WaitlistPosition(ctxT(t), "f", o.ID)
		if err != nil || n != want[i] {
			t.Fatalf("position of %s: %d %v, want %d", o.Key, n, err, want[i])
		}
	}
	// Cancelling the stored entry promotes b: c and d move up.
	mustCancel(t, s, "f", out[0].ID)
	for i, w := range []int{0, 0, 1, 2} {
		if n, err := s.WaitlistPosition(ctxT(t), "f", out[i].ID); err != nil || n != w {
			t.Fatalf("after cancel, position of %s: %d %v, want %d", out[i].Key, n, err, w)
		}
	}
	if n, err := s.WaitlistPosition(ctxT(t), "f", "no-such-id"); err != nil || n != 0 {
		t.Fatalf("unknown id: %d %v", n, err)
	}
}
