package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
)

// testPruner: a journal that prunes deletes a form's entries received
// before the cutoff once they are acknowledged, at most limit a call, and
// nothing else: not a newer entry, not another form's, not one still in
// flight.
func testPruner(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	p := capability[journal.Pruner](t, j)
	ctx := ctxT(t)
	cutoff := time.Now().Add(-time.Hour)
	old := func(form, key string) journal.Entry {
		e := NewEntry(form, key)
		e.ReceivedAt = cutoff.Add(-time.Hour).UTC().Truncate(time.Microsecond)
		return e
	}
	for _, e := range []journal.Entry{old("f", "old-1"), old("f", "old-2"), NewEntry("f", "new"), old("g", "old"), old("f", "held")} {
		mustAppend(t, j, e)
	}
	got := fetchN(t, j, 5)
	if got[4].Key != "held" {
		t.Fatalf("delivered %s last, want held", got[4].Key)
	}
	for _, e := range got[:4] {
		if err := j.Ack(ctx, e.Seq); err != nil {
			t.Fatal(err)
		}
	}
	// An acknowledgement may reach what the journal prunes by a moment
	// later (sqlitejournal saves its floor every second).
	deadline := time.Now().Add(10 * time.Second)
	for pruned := 0; pruned < 2; {
		n, err := p.Prune(ctx, "f", cutoff, 1)
		if err != nil {
			t.Fatalf("prune: %v", err)
		}
		if n > 1 {
			t.Fatalf("pruned %d entries with a limit of 1", n)
		}
		pruned += n
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("pruned %d of the 2 old, acknowledged entries", pruned)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n, err := p.Prune(ctx, "f", cutoff, 10); err != nil || n != 0 {
		t.Fatalf("prune again: %d, %v; want nothing left to prune", n, err)
	}
	for _, c := range []struct {
		form, key string
		kept      bool
	}{{"f", "old-1", false}, {"f", "old-2", false}, {"f", "new", true}, {"g", "old", true}, {"f", "held", true}} {
		if _, found, err := j.Lookup(ctx, c.form, c.key); err != nil || found != c.kept {
			t.Errorf("lookup %s/%s after prune: found %v, %v; want %v", c.form, c.key, found, err, c.kept)
		}
	}
	var keys []string
	if err := j.Read(ctx, journal.Filter{}, func(e journal.Entry) error {
		keys = append(keys, e.Form+"/"+e.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[f/new g/old f/held]" {
		t.Fatalf("read after prune: %v", keys)
	}
	if err := j.Ack(ctx, got[4].Seq); err != nil {
		t.Fatal(err)
	}
}

// testWritability: a healthy journal says it can take appends, before and
// after one, and its check leaves nothing behind; a closed one says it
// cannot.
func testWritability(t *testing.T, open func() journal.Journal) {
	j := open()
	closed := false
	defer func() {
		if !closed {
			closeJ(t, j)
		}
	}()
	w := capability[journal.Writability](t, j)
	ctx := ctxT(t)
	if err := w.Writable(ctx); err != nil {
		t.Fatalf("a new journal: %v", err)
	}
	mustAppend(t, j, NewEntry("f", "a"))
	if err := w.Writable(ctx); err != nil {
		t.Fatalf("after an append: %v", err)
	}
	n := 0
	if err := j.Read(ctx, journal.Filter{}, func(journal.Entry) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("read after the checks: %d entries, %v; want the one appended", n, err)
	}
	closeJ(t, j)
	closed = true
	if err := w.Writable(ctx); !errors.Is(err, journal.ErrUnavailable) && !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("a closed journal: %v, want ErrUnavailable or ErrClosed", err)
	}
}

// testOutcomeBus: an announcement to an instance reaches that instance's
// subscribers, byte for byte, and no other instance's; a stopped
// subscription gets no more while the others still do; the limit the
// bus gives is the one it keeps (an announcement of that size is taken,
// one byte more refused), so that senders cut their outcomes under it.
func testOutcomeBus(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	bus := capability[journal.OutcomeBus](t, j)
	limit := bus.MaxAnnouncement()
	if limit < 1<<10 {
		t.Fatalf("MaxAnnouncement %d: too small to carry a batch's outcomes", limit)
	}
	if err := bus.PublishOutcomes("nobody", make([]byte, limit)); err != nil {
		t.Fatalf("an announcement of MaxAnnouncement (%d) bytes: %v", limit, err)
	}
	if err := bus.PublishOutcomes("nobody", make([]byte, limit+1)); err == nil {
		t.Fatalf("an announcement of MaxAnnouncement+1 (%d) bytes was taken: the limit is not the bus's", limit+1)
	}
	subscribe := func(instance string) (<-chan []byte, func()) {
		t.Helper()
		ch := make(chan []byte, 64)
		stop, err := bus.SubscribeOutcomes(instance, func(data []byte) {
			select {
			case ch <- bytes.Clone(data):
			default:
			}
		})
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		return ch, stop
	}
	a, stopA := subscribe("a")
	a2, stopA2 := subscribe("a")
	defer stopA2()
	other, stopOther := subscribe("b")
	defer stopOther()
	// Announcements are at most once: announce again until each
	// subscriber has one.
	announce := func(instance, msg string, to ...<-chan []byte) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, ch := range to {
			for got := false; !got; {
				if err := bus.PublishOutcomes(instance, []byte(msg)); err != nil {
					t.Fatalf("announce: %v", err)
				}
				timeout := time.After(100 * time.Millisecond)
			drain:
				for {
					select {
					case data := <-ch:
						if string(data) == msg {
							got = true
							break drain
						}
					case <-timeout:
						break drain
					}
				}
				if !got && time.Now().After(deadline) {
					t.Fatalf("announcement %s never arrived", msg)
				}
			}
		}
	}
	announce("a", `[{"form":"f","key":"one"}]`, a, a2)
	stopA()
	announce("a", `[{"form":"f","key":"two"}]`, a2)
	// What went to instance b's subject proves that subject delivers; what
	// went to a's must not be on it.
	announce("b", `[{"form":"f","key":"three"}]`, other)
	late := time.After(200 * time.Millisecond)
	for {
		select {
		case data := <-a:
			if strings.Contains(string(data), "two") {
				t.Fatalf("a stopped subscription got %s", data)
			}
		case data := <-other:
			if !strings.Contains(string(data), "three") {
				t.Fatalf("instance b's subscriber got %s, announced to instance a", data)
			}
		case <-late:
			return
		}
	}
}

// testLaxDurability: what a journal reports as lax is one distinct
// sentence a reason, found from the storage's settings: it does not
// change while the journal runs, and the same storage opened again
// reports the same.
func testLaxDurability(t *testing.T, open func() journal.Journal) {
	j := open()
	closed := false
	defer func() {
		if !closed {
			closeJ(t, j)
		}
	}()
	first := slices.Sorted(slices.Values(capability[journal.LaxDurability](t, j).LaxDurability()))
	for i, reason := range first {
		if strings.TrimSpace(reason) == "" {
			t.Fatalf("an empty reason among %q", first)
		}
		if i > 0 && first[i-1] == reason {
			t.Fatalf("reason %q given twice", reason)
		}
	}
	if again := slices.Sorted(slices.Values(j.(journal.LaxDurability).LaxDurability())); !slices.Equal(again, first) {
		t.Fatalf("lax durability changed while running: %q, then %q", first, again)
	}
	closeJ(t, j)
	closed = true
	j2 := open()
	defer closeJ(t, j2)
	l, ok := j2.(journal.LaxDurability)
	if !ok {
		t.Fatal("the journal reopened is not a journal.LaxDurability")
	}
	if again := slices.Sorted(slices.Values(l.LaxDurability())); !slices.Equal(again, first) {
		t.Fatalf("the same storage reopened: %q, before %q", again, first)
	}
}

// testLiveness: an open journal's writer answers, idle and after an
// append; a closed one's does not, and Alive returns when its context
// ends rather than hang.
func testLiveness(t *testing.T, open func() journal.Journal) {
	j := open()
	l, ok := j.(journal.Liveness)
	if !ok {
		closeJ(t, j)
		t.Skipf("%T has no journal.Liveness", j)
	}
	ctx := ctxT(t)
	if err := l.Alive(ctx); err != nil {
		t.Fatalf("a new journal: %v", err)
	}
	mustAppend(t, j, NewEntry("f", "a"))
	if err := l.Alive(ctx); err != nil {
		t.Fatalf("after an append: %v", err)
	}
	closeJ(t, j)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Alive(short); err == nil {
		t.Fatal("a closed journal's writer says it is alive")
	}
}

// testSizer: a journal counts the bytes it uses, more after many appends
// than before, and without a bound it reports none.
func testSizer(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	sz := capability[journal.Sizer](t, j)
	ctx := ctxT(t)
	before, limit, err := sz.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if before <= 0 || limit != 0 {
		t.Fatalf("a new journal: %d bytes used of %d, want some used and no bound", before, limit)
	}
	for i := range 200 {
		e := NewEntry("f", fmt.Sprintf("k%03d", i))
		e.Data = []byte(`{"note":"` + strings.Repeat("x", 500) + `"}`)
		mustAppend(t, j, e)
	}
	after, _, err := sz.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after < before+200*500 {
		t.Fatalf("after 200 appends of 500 bytes: %d bytes used, %d before", after, before)
	}
}
