package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// checkinCases are the rules of check-in at the door: an entry's first
// check-in is decided once, a scan's key gets its first answer again,
// and only a stored entry is let in.
var checkinCases = []storeCase{
	{"CheckInOnce", testCheckInOnce},
	{"CheckInRacesDecideOnce", testCheckInRace},
}

func scan(form, id, key, door string) store.Scan {
	return store.Scan{Form: form, EntryID: id, Key: key, Door: door, ScannedAt: time.Now().UTC().Truncate(time.Microsecond)}
}

func mustCheckIn(t *testing.T, s store.Store, sc store.Scan) store.ScanResult {
	t.Helper()
	r, err := s.CheckIn(ctxT(t), sc)
	if err != nil {
		t.Fatalf("check in %+v: %v", sc, err)
	}
	return r
}

func testCheckInOnce(t *testing.T, s store.Store) {
	if err := s.PutForms(ctxT(t), []form.Record{{ID: "f", Site: "site", Source: []byte("id: f"), Capacity: intp(1), WhenFull: form.WhenFullWaitlist}}); err != nil {
		t.Fatal(err)
	}
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"))
	a, b := out[0].ID, out[1].ID

	first := mustCheckIn(t, s, scan("f", a, "k1", "A"))
	if first.Result != store.CheckedIn || first.Door != "A" || first.At.IsZero() || first.Status != store.StatusStored || first.Replayed {
		t.Fatalf("first scan: %+v", first)
	}
	again := mustCheckIn(t, s, scan("f", a, "k1", "B"))
	if again.Result != store.CheckedIn || again.Door != "A" || !again.At.Equal(first.At) || !again.Replayed {
		t.Fatalf("the first scan sent again: %+v, want its first answer, replayed", again)
	}
	second := mustCheckIn(t, s, scan("f", a, "k2", "B"))
	if second.Result != store.AlreadyCheckedIn || second.Door != "A" || !second.At.Equal(first.At) || second.Replayed {
		t.Fatalf("a second scan: %+v, want already, naming door A and the first time", second)
	}
	if r := mustCheckIn(t, s, scan("f", a, "k2", "C")); r.Result != store.AlreadyCheckedIn || !r.Replayed {
		t.Fatalf("the second scan sent again: %+v", r)
	}
	waiting := mustCheckIn(t, s, scan("f", b, "k3", "A"))
	if waiting.Result != store.NotValidNow || waiting.Status != store.StatusWaitlisted || !waiting.At.IsZero() {
		t.Fatalf("a waitlisted entry's scan: %+v", waiting)
	}
	if _, err := s.CheckIn(ctxT(t), scan("f", b, "k1", "A")); !errors.Is(err, store.ErrScanKeyReused) {
		t.Fatalf("a key reused for another ticket: %v, want ErrScanKeyReused", err)
	}
	if _, err := s.CheckIn(ctxT(t), scan("f", "no-such-entry", "k9", "A")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no entry: %v, want ErrNotFound", err)
	}
	if _, err := s.CheckIn(ctxT(t), scan("g", a, "k8", "A")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an entry of another form: %v, want ErrNotFound", err)
	}

	roster, err := s.Roster(ctxT(t), "f")
	if err != nil || len(roster) != 2 || roster[0].ID != a || roster[0].Door != "A" || !roster[0].CheckedInAt.Equal(first.At) ||
		roster[1].ID != b || roster[1].Status != store.StatusWaitlisted || !roster[1].CheckedInAt.IsZero() || string(roster[0].Data) != `{"k":"a"}` {
		t.Fatalf("roster %+v (%v)", roster, err)
	}

	// Exports and the webhook's entries carry the check-in: a's time and
	// door, nothing for b.
	var exported []store.Row
	if err := s.Export(ctxT(t), "f", func(r store.Row) error { exported = append(exported, r); return nil }); err != nil || len(exported) != 2 {
		t.Fatalf("export: %d rows, %v", len(exported), err)
	}
	if exported[0].ID != a || !exported[0].CheckedInAt.Equal(first.At) || exported[0].Door != "A" ||
		!exported[1].CheckedInAt.IsZero() || exported[1].Door != "" {
		t.Fatalf("exported check-ins %+v", exported)
	}
	docs, err := s.EntryDocs(ctxT(t), []string{a, b})
	if err != nil || !docs[a].CheckedInAt.Equal(first.At) || docs[a].Door != "A" || !docs[b].CheckedInAt.IsZero() || docs[b].Door != "" {
		t.Fatalf("entry docs' check-ins %+v (%v)", docs, err)
	}

	// Undo: the next scan lets the entry in again, with a new event; the
	// earlier scans keep their answers.
	if undone, err := s.UndoCheckIn(ctxT(t), "f", a); err != nil || !undone {
		t.Fatalf("undo: %v %v", undone, err)
	}
	if undone, err := s.UndoCheckIn(ctxT(t), "f", a); err != nil || undone {
		t.Fatalf("undo again: %v %v, want false", undone, err)
	}
	if r := mustCheckIn(t, s, scan("f", a, "k2", "C")); r.Result != store.AlreadyCheckedIn || !r.Replayed {
		t.Fatalf("an earlier scan after the undo: %+v, want its first answer", r)
	}
	if r := mustCheckIn(t, s, scan("f", a, "k4", "C")); r.Result != store.CheckedIn || r.Door != "C" {
		t.Fatalf("after the undo: %+v, want checked in at C", r)
	}

	// A promoted entry is let in; a cancelled one is not, naming its status.
	if promoted, err := s.Cancel(ctxT(t), "f", a); err != nil || !slices.Equal(promoted, []string{b}) {
		t.Fatalf("cancel: %v %v", promoted, err)
	}
	if r := mustCheckIn(t, s, scan("f", a, "k5", "A")); r.Result != store.NotValidNow || r.Status != store.StatusCancelled {
		t.Fatalf("a cancelled entry's scan: %+v", r)
	}
	if r := mustCheckIn(t, s, scan("f", b, "k6", "A")); r.Result != store.CheckedIn {
		t.Fatalf("the promoted entry's scan: %+v", r)
	}
	if h := history(t, s, a); !slices.Equal(h, []string{"stored:stored", "checked_in:stored", "checked_in:stored", "cancelled:cancelled"}) {
		t.Errorf("history %v: one checked_in event per first check-in", h)
	}

	// An entry whose data was erased (formd forget, retention) stays on
	// the roster with its check-in and no data: the door page and a typed
	// code's lookup still read the roster.
	if n, err := s.EraseEntries(ctxT(t), []string{b}, nil); err != nil || n != 1 {
		t.Fatalf("erase b: %d %v", n, err)
	}
	roster, err = s.Roster(ctxT(t), "f")
	if err != nil || len(roster) != 2 || roster[1].ID != b || len(roster[1].Data) != 0 || roster[1].CheckedInAt.IsZero() {
		t.Fatalf("the roster with an erased entry: %+v (%v)", roster, err)
	}
}

// testCheckInRace: many doors (or instances) scanning one ticket at once,
// each scan sent twice: exactly one is the first check-in, every other
// answer names it, and every key's two sends agree.
func testCheckInRace(t *testing.T, s store.Store) {
	const doors = 12
	if err := s.PutForms(ctxT(t), []form.Record{{ID: "f", Site: "site", Source: []byte("id: f")}}); err != nil {
		t.Fatal(err)
	}
	id := mustApply(t, s, sub("f", "a", 1, "pa"))[0].ID
	results := make([]store.ScanResult, 2*doors)
	errs := make([]error, 2*doors)
	var wg sync.WaitGroup
	for i := range 2 * doors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := scan("f", id, fmt.Sprint("key-", i%doors), fmt.Sprint("door-", i%doors))
			// No retry on ErrUnavailable: a scan that loses the race
			// must read the first check-in, not fail.
			results[i], errs[i] = s.CheckIn(ctxT(t), sc)
		}()
	}
	wg.Wait()
	firsts := 0
	var first store.ScanResult
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("scan %d: %v", i, errs[i])
		}
		if r.Result == store.CheckedIn && !r.Replayed {
			firsts++
			first = r
		}
		other := results[(i+doors)%(2*doors)]
		if r.Result != other.Result || r.Door != other.Door || !r.At.Equal(other.At) {
			t.Fatalf("key %d answered %+v and %+v", i%doors, r, other)
		}
	}
	if firsts != 1 {
		t.Fatalf("%d first check-ins, want 1: %+v", firsts, results)
	}
	for _, r := range results {
		if r.Door != first.Door || !r.At.Equal(first.At) {
			t.Fatalf("%+v does not name the first check-in %+v", r, first)
		}
	}
	if h := history(t, s, id); !slices.Equal(h, []string{"stored:stored", "checked_in:stored"}) {
		t.Errorf("history %v: one checked_in event", h)
	}
}
