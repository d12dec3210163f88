package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Erasing old data and a person's data.

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
	n, err := s.EraseEntries(ctx, []string{a.ID, b.ID}, nil)
	if err != nil || n != 2 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if n, err := s.EraseEntries(ctx, []string{a.ID, b.ID}, nil); err != nil || n != 0 {
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
