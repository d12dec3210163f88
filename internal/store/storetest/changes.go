package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// changeCases are the rules of a participant's change of their entry
// (store.Changes) and of erasure requests (store.ErasureRequests).
var changeCases = []storeCase{
	{"ChangeKeepsHistoryAndVersions", testChangeHistory},
	{"ChangeOfOptionReDecidesPlaces", testChangeOption},
	{"ChangeToAFullOptionKeepsThePlace", testChangeFullOption},
	{"ChangeDecidesTheParticipantAgain", testChangeClaims},
	{"ChangesAndRegistrationsNeverOversell", testChangeConcurrent},
	{"ErasureRequestsOnceDoneByErasure", testErasureRequests},
	{"ErasureNoticeCarriesTheAddressUntilDelivered", testErasureNotice},
	{"ErasureNoticeAddressClearedWithoutDelivery", testErasureNoticeCleared},
	{"DraftCountsWithoutValues", testDraftCounts},
}

// change is a change of entry id to session (and data naming key),
// made from version, claiming the given tokens.
func change(formID, id, key, session string, version int, claims ...string) store.Change {
	data := fmt.Sprintf(`{"k":%q,"session":%q}`, key, session)
	return store.Change{Form: formID, ID: id, Version: version, Data: []byte(data),
		Fingerprint: sha256.Sum256([]byte(data)), Claims: claims, Now: time.Now().UTC().Truncate(time.Microsecond)}
}

// mustChange retries a change the store found busy (contention).
func doChange(s store.Store, c store.Change) (store.Changed, error) {
	r, err := s.Change(context.Background(), c)
	for err != nil && errors.Is(err, store.ErrUnavailable) {
		r, err = s.Change(context.Background(), c)
	}
	return r, err
}

func testChangeHistory(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	o := mustApply(t, s, sub("f", "a", 1, "p1"))[0]
	if v, err := s.EntryVersion(ctxT(t), "f", o.ID); err != nil || v != 1 {
		t.Fatalf("version of a new entry %d (%v), want 1", v, err)
	}
	c := change("f", o.ID, "a2", "", 1, "p1")
	r, err := s.Change(ctxT(t), c)
	if err != nil || r.Version != 2 || r.Status != store.StatusStored || r.Replayed || r.Same {
		t.Fatalf("change: %+v %v, want version 2, stored", r, err)
	}
	// The same change again (a retry with the same If-Match) is that
	// change, not a second one.
	if r, err := s.Change(ctxT(t), c); err != nil || !r.Replayed || r.Version != 2 {
		t.Fatalf("retried change: %+v %v, want replayed at version 2", r, err)
	}
	// Another change from version 1 (an older tab) is stale.
	other := change("f", o.ID, "a3", "", 1, "p1")
	if _, err := s.Change(ctxT(t), other); !errors.Is(err, store.ErrEntryStale) {
		t.Fatalf("stale change: %v", err)
	} else if se, _ := store.AsStaleEntry(err); se.Current != 2 {
		t.Fatalf("stale change names version %d, want 2", se.Current)
	}
	// The same data again changes nothing and makes no version.
	if r, err := s.Change(ctxT(t), change("f", o.ID, "a2", "", 2, "p1")); err != nil || !r.Same || r.Version != 2 {
		t.Fatalf("unchanged data: %+v %v", r, err)
	}
	d, err := s.Entry(ctxT(t), "f", o.ID)
	if err != nil || string(d.Data) != string(c.Data) {
		t.Fatalf("entry after change: %s %v", d.Data, err)
	}
	vs, err := s.Versions(ctxT(t), "f", o.ID)
	if err != nil || len(vs) != 1 || vs[0].Version != 1 || string(vs[0].Data) != `{"k":"a"}` || vs[0].ReplacedAt.IsZero() {
		t.Fatalf("versions %+v %v: want version 1 with the first data", vs, err)
	}
	if h := history(t, s, o.ID); !slices.Equal(h, []string{"stored:stored", "updated:stored"}) {
		t.Fatalf("events %v", h)
	}
	// Unknown entries and ended ones.
	if _, err := s.Change(ctxT(t), change("f", "nope", "x", "", 1)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown entry: %v", err)
	}
	mustCancel(t, s, "f", o.ID)
	if _, err := s.Change(ctxT(t), change("f", o.ID, "a4", "", 2)); !errors.Is(err, store.ErrNotLive) {
		t.Fatalf("change of a cancelled entry: %v", err)
	}
	// Erasure takes the history with the data.
	if n, err := s.EraseEntries(ctxT(t), []string{o.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if vs, err := s.Versions(ctxT(t), "f", o.ID); err != nil || len(vs) != 0 {
		t.Fatalf("versions after erasure %+v %v", vs, err)
	}
	if _, err := s.Change(ctxT(t), change("f", o.ID, "a5", "", 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("change of an erased entry: %v", err)
	}
}

func testChangeOption(t *testing.T, s store.Store) {
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(2)})
	m1 := mustApply(t, s, sessionSub("f", "m1", 1, "morning"))[0]
	m2 := mustApply(t, s, sessionSub("f", "m2", 2, "morning"))[0]
	if m2.Status != store.StatusWaitlisted {
		t.Fatalf("m2 %+v", m2)
	}
	// m1 moves to the afternoon: it takes a place there, gives the
	// morning's back, and the morning's waitlist is served.
	r, err := s.Change(ctxT(t), change("f", m1.ID, "m1", "afternoon", 1, "p-m1"))
	if err != nil || r.Place != "afternoon" || r.Status != store.StatusStored || !slices.Equal(r.Promoted, []string{m2.ID}) {
		t.Fatalf("move: %+v %v, want afternoon and m2 promoted", r, err)
	}
	opts := optionCaps(t, s, "f")
	if opts["morning"].Taken != 1 || opts["afternoon"].Taken != 1 {
		t.Fatalf("places after the move %+v", opts)
	}
	vs, err := s.Versions(ctxT(t), "f", m1.ID)
	if err != nil || len(vs) != 1 || vs[0].Place != "morning" {
		t.Fatalf("versions %+v %v: want the morning kept", vs, err)
	}
	// A waitlisted entry's change moves its wait: a3 waits for the
	// morning, moves to the afternoon, where a place is free.
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(2)})
	w := mustApply(t, s, sessionSub("f", "w", 3, "morning"))[0]
	if w.Status != store.StatusWaitlisted {
		t.Fatalf("w %+v", w)
	}
	r, err = s.Change(ctxT(t), change("f", w.ID, "w", "afternoon", 1, "p-w"))
	if err != nil || r.Status != store.StatusStored || r.Place != "afternoon" {
		t.Fatalf("waitlisted moved to a free option: %+v %v, want stored", r, err)
	}
	if c := optionCaps(t, s, "f")["afternoon"]; c.Taken != 2 {
		t.Fatalf("afternoon %+v", c)
	}
}

func testChangeFullOption(t *testing.T, s store.Store) {
	// Whatever when_full says, a change to a full option is refused.
	for _, wf := range []string{form.WhenFullWaitlist, form.WhenFullReject} {
		t.Run(wf, func(t *testing.T) {
			id := "f-" + wf
			putSessions(t, s, id, nil, wf,
				form.OptionPlaces{Value: "morning", Capacity: intp(1)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(1)})
			m := mustApply(t, s, sessionSub(id, "m", 1, "morning"))[0]
			a := mustApply(t, s, sessionSub(id, "a", 2, "afternoon"))[0]
			_, err := s.Change(ctxT(t), change(id, m.ID, "m", "afternoon", 1, "p-m"))
			if of, ok := store.AsOptionFull(err); !ok || of.Option != "afternoon" {
				t.Fatalf("change to a full option: %v, want OptionFullError naming afternoon", err)
			}
			// Nothing changed: the place, the data, the version, the
			// participant (still holds p-m), no event.
			opts := optionCaps(t, s, id)
			if opts["morning"].Taken != 1 || opts["afternoon"].Taken != 1 {
				t.Fatalf("places %+v", opts)
			}
			if v, _ := s.EntryVersion(ctxT(t), id, m.ID); v != 1 {
				t.Fatalf("version %d", v)
			}
			if h := history(t, s, m.ID); len(h) != 1 {
				t.Fatalf("events %v", h)
			}
			again := sessionSub(id, "m-again", 3, "morning")
			again.Claims = []string{"p-m"}
			if o := mustApply(t, s, again)[0]; o.Status != store.StatusDuplicate && o.Status != store.StatusRejected {
				t.Fatalf("the participant's claim was lost: %+v", o)
			}
			_ = a
		})
	}
}

func testChangeClaims(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	a := mustApply(t, s, sub("f", "a", 1, "pa"))[0]
	mustApply(t, s, sub("f", "b", 2, "pb"))
	// a cannot become b's participant.
	if _, err := s.Change(ctxT(t), change("f", a.ID, "a", "", 1, "pb")); !errors.Is(err, store.ErrChangeDuplicate) {
		t.Fatalf("change onto another's participant: %v", err)
	}
	// a keeps pa: nobody else may take it.
	if o := mustApply(t, s, sub("f", "c", 3, "pa"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("pa after a refused change: %+v, want still a's", o)
	}
	// a becomes pc: pa is free for someone else.
	if _, err := s.Change(ctxT(t), change("f", a.ID, "a", "", 1, "pc")); err != nil {
		t.Fatal(err)
	}
	if o := mustApply(t, s, sub("f", "d", 4, "pa"))[0]; o.Status != store.StatusStored {
		t.Fatalf("pa after a's change: %+v, want free", o)
	}
	if o := mustApply(t, s, sub("f", "e", 5, "pc"))[0]; o.Status != store.StatusDuplicate {
		t.Fatalf("pc after a's change: %+v, want a's", o)
	}
}

// testChangeConcurrent: changes of option racing with new registrations
// never put an option above its places and lose no place: at the end
// each option's count is the number of stored entries holding it.
func testChangeConcurrent(t *testing.T, s store.Store) {
	const places, movers, newcomers = 5, 8, 20
	putSessions(t, s, "f", nil, form.WhenFullWaitlist,
		form.OptionPlaces{Value: "morning", Capacity: intp(places)}, form.OptionPlaces{Value: "afternoon", Capacity: intp(places)})
	var movable []store.Outcome
	for i := range movers {
		o := mustApply(t, s, sessionSub("f", fmt.Sprint("m", i), uint64(i+1), "morning"))[0]
		if o.Status == store.StatusStored {
			movable = append(movable, o)
		}
	}
	var (
		wg   sync.WaitGroup
		errs = make(chan error, movers+newcomers)
	)
	for _, o := range movable {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := doChange(s, change("f", o.ID, o.Key, "afternoon", 1, "p-"+o.Key))
			if err != nil && !errors.Is(err, store.ErrOptionFull) {
				errs <- err
			}
		}()
	}
	for i := range newcomers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := []string{"morning", "afternoon"}[i%2]
			b := []journal.Entry{sessionSub("f", fmt.Sprint("n", i), uint64(100+i), session)}
			if err := ApplyUntilDecided(context.Background(), s, b); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	held := map[string]int{}
	rows, err := s.Entries(ctxT(t), store.EntryQuery{Form: "f", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status != store.StatusStored {
			continue
		}
		var d struct{ Session string }
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatal(err)
		}
		held[d.Session]++
	}
	opts := optionCaps(t, s, "f")
	for _, v := range []string{"morning", "afternoon"} {
		if held[v] > places || opts[v].Taken != held[v] {
			t.Fatalf("%s: %d stored entries hold it, counted %d, capacity %d", v, held[v], opts[v].Taken, places)
		}
		// No place lost: with people waiting for it, a free place would
		// have been given.
		if opts[v].Taken < places && opts[v].Waitlisted > 0 {
			t.Fatalf("%s: %d of %d taken while %d wait", v, opts[v].Taken, places, opts[v].Waitlisted)
		}
	}
}

func testErasureRequests(t *testing.T, s store.Store) {
	putForm(t, s, "f", nil, "")
	a := mustApply(t, s, sub("f", "a", 1, "pa"))[0]
	b := mustApply(t, s, sub("f", "b", 2, "pb"))[0]
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	r, created, err := s.RequestErasure(ctxT(t), "f", a.ID, at)
	if err != nil || !created || r.EntryID != a.ID || !r.RequestedAt.Equal(at) || !r.DoneAt.IsZero() {
		t.Fatalf("request: %+v %v %v", r, created, err)
	}
	if r, created, err := s.RequestErasure(ctxT(t), "f", a.ID, at.Add(time.Hour)); err != nil || created || !r.RequestedAt.Equal(at) {
		t.Fatalf("second request: %+v %v %v, want the first, not created", r, created, err)
	}
	if _, _, err := s.RequestErasure(ctxT(t), "f", "nope", at); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown entry: %v", err)
	}
	if _, _, err := s.RequestErasure(ctxT(t), "f", b.ID, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	pending, err := s.ErasureRequests(ctxT(t), "f", 10)
	if err != nil || len(pending) != 2 || pending[0].EntryID != a.ID || pending[1].EntryID != b.ID {
		t.Fatalf("pending %+v %v", pending, err)
	}
	if other, err := s.ErasureRequests(ctxT(t), "g", 10); err != nil || len(other) != 0 {
		t.Fatalf("another form's %+v %v", other, err)
	}
	if _, err := s.EraseEntries(ctxT(t), []string{a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.ErasureRequest(ctxT(t), "f", a.ID); err != nil || !ok || r.DoneAt.IsZero() {
		t.Fatalf("request after erasure: %+v %v %v, want done", r, ok, err)
	}
	if pending, err := s.ErasureRequests(ctxT(t), "", 10); err != nil || len(pending) != 1 || pending[0].EntryID != b.ID {
		t.Fatalf("pending after erasure %+v %v", pending, err)
	}
	if _, _, err := s.RequestErasure(ctxT(t), "f", a.ID, at); err != nil {
		// The done request is still there: asking again is no error.
		t.Fatalf("request of an erased entry with a done request: %v", err)
	}
}

func testDraftCounts(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i, k := range []string{"a", "b"} {
		if _, err := s.SaveDraft(ctxT(t), store.DraftSave{Form: "f", Site: "site", Key: k, TokenHash: []byte("tok-" + k),
			Data: []byte(`{"secret":"x"}`), Now: now.Add(time.Duration(i) * time.Minute), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DraftCounts(ctxT(t))
	if err != nil || len(got) != 1 || got[0].Form != "f" || got[0].Count != 2 || !got[0].Oldest.Equal(now) {
		t.Fatalf("draft counts %+v %v", got, err)
	}
}
