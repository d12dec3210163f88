package sqlitejournal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
)

// file stands for the journal's file: the committed entries delivery
// reads back when they did not fit in memory.
type file struct {
	mu    sync.Mutex
	es    []journal.Entry
	reads int
}

func (f *file) commit(seqs ...uint64) []published {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []published
	for _, s := range seqs {
		e := journal.Entry{Seq: s, Form: "f", Key: fmt.Sprint(s), ReceivedAt: time.UnixMicro(int64(s))}
		f.es = append(f.es, e)
		out = append(out, published{e: e})
	}
	return out
}

func (f *file) read(_ context.Context, after, upto uint64, n int) ([]journal.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []journal.Entry
	for _, e := range f.es {
		if e.Seq > after && e.Seq <= upto && len(out) < n {
			out = append(out, e)
		}
	}
	return out, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestDelivery(maxReady int) (*delivery, *file, *clock) {
	f := &file{}
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	return newDelivery(0, 0, maxReady, c.now, f.read), f, c
}

func seqsOf(es []journal.Entry) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func mustFetch(t *testing.T, d *delivery, limit int) []journal.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	es, err := d.fetch(ctx, limit)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return es
}

func wantSeqs(t *testing.T, what string, got []journal.Entry, want ...uint64) {
	t.Helper()
	if fmt.Sprint(seqsOf(got)) != fmt.Sprint(want) {
		t.Fatalf("%s: got %v, want %v", what, seqsOf(got), want)
	}
}

// Entries go out in journal order, once each, and the watermark follows the
// acknowledgements: it stays below the oldest entry still in flight.
func TestDeliveryOrderAndWatermark(t *testing.T) {
	t.Parallel()
	d, f, _ := newTestDelivery(100)
	d.publish(f.commit(1, 2, 3))
	got := mustFetch(t, d, 2)
	wantSeqs(t, "first fetch", got, 1, 2)
	for _, e := range got {
		if e.Handouts != 1 {
			t.Fatalf("entry %d handed out %d times on its first delivery", e.Seq, e.Handouts)
		}
	}
	wantSeqs(t, "second fetch", mustFetch(t, d, 10), 3)
	d.ack(2, 3)
	if w, changed := d.unsaved(); w != 0 || changed {
		t.Fatalf("watermark with 1 in flight = %d (changed %v), want 0 (unchanged)", w, changed)
	}
	d.ack(1)
	w, changed := d.unsaved()
	if w != 3 || !changed {
		t.Fatalf("watermark after every ack = %d (changed %v), want 3 (changed)", w, changed)
	}
	d.markSaved(w)
	if _, changed := d.unsaved(); changed || d.savedMark() != 3 {
		t.Fatalf("after markSaved(3): changed %v, saved %d", changed, d.savedMark())
	}
	if d.isPending(3) || !d.isPending(4) {
		t.Fatalf("isPending(3) = %v, isPending(4) = %v; want false, true", d.isPending(3), d.isPending(4))
	}
}

// A nak'd entry is handed out again once its delay has passed, before new
// entries, with its handouts counted.
func TestDeliveryNak(t *testing.T) {
	t.Parallel()
	d, f, c := newTestDelivery(100)
	d.publish(f.commit(1))
	wantSeqs(t, "first", mustFetch(t, d, 1), 1)
	d.nak(1, time.Minute)
	d.nak(1, time.Minute) // a second nak of the same delivery schedules nothing more
	d.publish(f.commit(2))
	wantSeqs(t, "before the delay", mustFetch(t, d, 10), 2)
	_, next, err := d.take(context.Background(), 10)
	if err != nil || next <= 0 {
		t.Fatalf("take with a nak scheduled: next %v, err %v; want a wait", next, err)
	}
	c.add(time.Minute)
	d.publish(f.commit(3))
	got := mustFetch(t, d, 10)
	wantSeqs(t, "after the delay", got, 1, 3)
	if got[0].Handouts != 2 {
		t.Fatalf("redelivered entry's handouts = %d, want 2", got[0].Handouts)
	}
	c.add(time.Minute)
	if es, _, _ := d.take(context.Background(), 10); len(es) != 0 {
		t.Fatalf("a nak'd entry came back twice: %v", seqsOf(es))
	}
}

// Past maxReady, entries stay on disk and are read back in order.
func TestDeliverySpill(t *testing.T) {
	t.Parallel()
	d, f, _ := newTestDelivery(2)
	d.publish(f.commit(1, 2, 3, 4, 5))
	var got []journal.Entry
	for len(got) < 5 {
		got = append(got, mustFetch(t, d, 2)...)
	}
	wantSeqs(t, "all", got, 1, 2, 3, 4, 5)
	if f.reads == 0 {
		t.Fatal("five entries with room for two were all delivered from memory")
	}
	if d.spilled {
		t.Fatal("still spilled after everything was read back")
	}
	st, probe, _ := d.stats()
	if st.Backlog != 5 || st.LastSeq != 5 || probe {
		t.Fatalf("stats with 5 in flight: %+v, probe %v", st, probe)
	}
}

// A restart starts from the saved watermark: what is above it is on disk
// only, and stats asks the caller for the oldest's age.
func TestDeliveryRestart(t *testing.T) {
	t.Parallel()
	f := &file{}
	f.commit(1, 2, 3, 4)
	d := newDelivery(2, 4, 100, time.Now, f.read)
	st, probe, cursor := d.stats()
	if st.Backlog != 2 || !probe || cursor != 2 {
		t.Fatalf("stats after restart: %+v, probe %v, cursor %d; want backlog 2, probe, cursor 2", st, probe, cursor)
	}
	wantSeqs(t, "after restart", mustFetch(t, d, 10), 3, 4)
	cursor, n := d.formInFlight("f")
	if cursor != 4 || n != 2 {
		t.Fatalf("formInFlight = %d, %d; want 4, 2", cursor, n)
	}
}

// Entries decided at append are not handed out: at the head of the stream
// they count as taken, behind undelivered ones they are skipped.
func TestDeliveryDecidedAhead(t *testing.T) {
	t.Parallel()
	d, f, _ := newTestDelivery(100)
	p := f.commit(1)
	p[0].decided = true
	d.publish(p)
	if _, changed := d.unsaved(); !changed || d.cursor != 1 {
		t.Fatalf("decided entry at the head: cursor %d, want 1", d.cursor)
	}
	ps := f.commit(2, 3, 4)
	ps[1].decided = true
	d.publish(ps)
	wantSeqs(t, "stream", mustFetch(t, d, 10), 2, 4)
	if len(d.decidedAhead) != 0 {
		t.Fatalf("decidedAhead kept %v after the stream passed it", d.decidedAhead)
	}
}

// Pending hands stale in-flight entries out again, oldest first, and not
// those waiting for a redelivery.
func TestDeliveryPending(t *testing.T) {
	t.Parallel()
	d, f, c := newTestDelivery(100)
	d.publish(f.commit(1, 2, 3))
	mustFetch(t, d, 10)
	d.nak(2, time.Hour)
	c.add(time.Minute)
	got := d.pending(c.now(), 1)
	wantSeqs(t, "pending, limit 1", got, 1)
	if got[0].Handouts != 2 {
		t.Fatalf("handouts = %d, want 2", got[0].Handouts)
	}
	wantSeqs(t, "pending again", d.pending(c.now(), 0), 3)
}

// After close, fetch answers ErrClosed, also to a fetch already waiting.
func TestDeliveryClose(t *testing.T) {
	t.Parallel()
	d, _, _ := newTestDelivery(100)
	errc := make(chan error, 1)
	go func() {
		_, err := d.fetch(context.Background(), 1)
		errc <- err
	}()
	d.close()
	if err := <-errc; !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("fetch after close: %v, want ErrClosed", err)
	}
}

// Publishers, fetchers, acks and naks at once (run with -race): every
// entry is acknowledged once, and then the watermark is the last entry.
func TestDeliveryConcurrent(t *testing.T) {
	t.Parallel()
	d, f, _ := newTestDelivery(8)
	const n = 2000
	go func() {
		// One publisher, as the writer publishes one batch at a time.
		for s := uint64(1); s <= n; s += 10 {
			d.publish(f.commit(s, s+1, s+2, s+3, s+4, s+5, s+6, s+7, s+8, s+9))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := make([]int, n+1)
	acked := 0
	var fetchers sync.WaitGroup
	for range 3 {
		fetchers.Add(1)
		go func() {
			defer fetchers.Done()
			for {
				es, err := d.fetch(ctx, 7)
				if err != nil {
					return // cancelled: all acknowledged, or the deadline
				}
				for _, e := range es {
					if e.Seq%13 == 0 && e.Handouts == 1 {
						d.nak(e.Seq, 0)
						continue
					}
					mu.Lock()
					seen[e.Seq]++
					acked++
					if acked == n {
						cancel()
					}
					mu.Unlock()
					d.ack(e.Seq)
				}
				d.unsaved()
			}
		}()
	}
	fetchers.Wait()
	for s := 1; s <= n; s++ {
		if seen[s] != 1 {
			t.Fatalf("entry %d acknowledged %d times, want 1", s, seen[s])
		}
	}
	if w, _ := d.unsaved(); w != n {
		t.Fatalf("watermark = %d, want %d", w, n)
	}
}
