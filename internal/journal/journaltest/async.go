package journaltest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
)

// testAsyncAppend: an async append (a form with durability async) is
// answered before it is durable, and from then on the journal that took it
// answers for its key as if it were written, so that a status request or a
// retry of the key is answered as the original: Lookup finds it, an
// append of the key, async or sync, reports it as the first entry, and it
// cannot be forgotten before it is decided. It is delivered once, with its
// position, and read like any entry.
func testAsyncAppend(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	e := NewEntry("f", "async")
	a, err := j.Append(ctx, e, false)
	if err != nil || a.Duplicate {
		t.Fatalf("async append = %+v, %v; want a new entry", a, err)
	}
	sameEntry(t, a.Entry, e)
	got, found, err := j.Lookup(ctx, "f", "async")
	if err != nil || !found {
		t.Fatalf("lookup right after an async append: found %v, %v", found, err)
	}
	sameEntry(t, got, e)
	if fg, ok := j.(journal.Forgetter); ok {
		if err := fg.Forget(ctx, "f", "async"); !errors.Is(err, journal.ErrPending) {
			t.Fatalf("forget right after an async append: %v, want ErrPending", err)
		}
	}
	for _, sync := range []bool{false, true} {
		again := NewEntry("f", "async")
		again.ID = fmt.Sprint("id-retry-", sync)
		d, err := j.Append(ctx, again, sync)
		if err != nil || !d.Duplicate || d.Entry.ID != e.ID {
			t.Fatalf("a retry of the key (sync %v) = %+v, %v; want the first entry as a duplicate", sync, d, err)
		}
	}
	delivered := fetchN(t, j, 1)[0]
	sameEntry(t, delivered, e)
	if delivered.Seq == 0 || delivered.Handouts != 1 {
		t.Fatalf("delivered seq %d handouts %d, want a position and one handout", delivered.Seq, delivered.Handouts)
	}
	if err := j.Ack(ctx, delivered.Seq); err != nil {
		t.Fatal(err)
	}
	fetchNone(t, j)
	// Once written, Lookup reports its position too.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, found, err := j.Lookup(ctx, "f", "async")
		if err != nil || !found {
			t.Fatalf("lookup once written: found %v, %v", found, err)
		}
		if got.Seq == delivered.Seq {
			sameEntry(t, got, e)
			break
		}
		if got.Seq != 0 || time.Now().After(deadline) {
			t.Fatalf("lookup once written: seq %d, want %d", got.Seq, delivered.Seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var keys []string
	if err := j.Read(ctx, journal.Filter{Form: "f"}, func(e journal.Entry) error {
		keys = append(keys, e.ID)
		return nil
	}); err != nil || fmt.Sprint(keys) != "["+e.ID+"]" {
		t.Fatalf("read: %v, %v; want the first entry only", keys, err)
	}
}

// testAsyncAppendsSurviveClose: Close writes what async appends left
// queued, so a clean shutdown loses none of them; the journal opened
// again delivers each once and still knows their keys.
func testAsyncAppendsSurviveClose(t *testing.T, open func() journal.Journal) {
	j := open()
	ctx := ctxT(t)
	const n = 200
	for i := range n {
		if _, err := j.Append(ctx, NewEntry("f", fmt.Sprint(i)), false); err != nil {
			t.Fatalf("async append %d: %v", i, err)
		}
	}
	closeJ(t, j)
	j = open()
	defer closeJ(t, j)
	read := 0
	if err := j.Read(ctx, journal.Filter{Form: "f"}, func(journal.Entry) error { read++; return nil }); err != nil || read != n {
		t.Fatalf("read after a reopen: %d of %d entries, %v", read, n, err)
	}
	seen := map[string]bool{}
	for _, e := range fetchN(t, j, n) {
		if seen[e.Key] {
			t.Fatalf("%s delivered twice", e.Key)
		}
		seen[e.Key] = true
		if err := j.Ack(ctx, e.Seq); err != nil {
			t.Fatal(err)
		}
	}
	fetchNone(t, j)
	if d, err := j.Append(ctx, NewEntry("f", "0"), false); err != nil || !d.Duplicate || d.Entry.Seq == 0 {
		t.Fatalf("an async append of a key written before the reopen = %+v, %v; want the first entry", d, err)
	}
}
