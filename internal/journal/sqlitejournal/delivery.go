package sqlitejournal

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
)

// delivery is the journal's state of handing entries out to the processor:
// what is ready in memory, how far the main stream has gone (cursor), what
// is in flight, what waits for a redelivery, and the watermark last saved.
// It lives in memory only; a restart starts again from the saved
// watermark. Its methods are safe for concurrent use.
type delivery struct {
	now      func() time.Time
	maxReady int
	// read reads back committed entries with after < seq <= upto, in
	// order, at most n: the entries that did not fit in ready.
	read func(ctx context.Context, after, upto uint64, n int) ([]journal.Entry, error)
	wake chan struct{}

	mu       sync.Mutex
	ready    []journal.Entry // appended, not yet delivered; seq > cursor
	spilled  bool            // entries past cursor exist on disk but not in ready
	cursor   uint64          // highest seq taken from the main stream
	lastSeq  uint64
	inflight map[uint64]*flight
	naks     nakHeap
	closed   bool
	saved    uint64 // watermark last written to disk
	// decidedAhead are entries decided at append that the main stream has
	// not passed yet (it skips them).
	decidedAhead map[uint64]struct{}
}

type flight struct {
	e           journal.Entry
	deliveredAt time.Time
	nakked      bool
}

// newDelivery starts from the saved watermark: every entry above it, up to
// lastSeq, is on disk only and is delivered again.
func newDelivery(saved, lastSeq uint64, maxReady int, now func() time.Time,
	read func(ctx context.Context, after, upto uint64, n int) ([]journal.Entry, error)) *delivery {
	return &delivery{
		now:          now,
		maxReady:     maxReady,
		read:         read,
		wake:         make(chan struct{}, 1),
		cursor:       saved,
		saved:        saved,
		lastSeq:      lastSeq,
		spilled:      lastSeq > saved,
		inflight:     map[uint64]*flight{},
		decidedAhead: map[uint64]struct{}{},
	}
}

// published is a committed entry, decided at append or for the processor.
type published struct {
	e       journal.Entry
	decided bool
}

// publish makes committed entries deliverable, and passes those decided
// at append: the main stream skips them.
func (d *delivery) publish(fresh []published) {
	if len(fresh) == 0 {
		return
	}
	undecided := false
	d.mu.Lock()
	for _, p := range fresh {
		e := p.e
		if e.Seq > d.lastSeq {
			d.lastSeq = e.Seq
		}
		if p.decided {
			if !d.spilled && len(d.ready) == 0 {
				// Everything before it has been taken: it counts as taken
				// and acknowledged.
				d.cursor = max(d.cursor, e.Seq)
				continue
			}
			d.decidedAhead[e.Seq] = struct{}{}
		} else {
			undecided = true
		}
		if d.spilled || len(d.ready) >= d.maxReady {
			d.spilled = true
			continue
		}
		d.ready = append(d.ready, e)
	}
	d.mu.Unlock()
	if undecided {
		d.signal()
	}
}

// committedUpTo notes entries committed up to last that were not
// published: they are read back from the file.
func (d *delivery) committedUpTo(last uint64) {
	d.mu.Lock()
	if last > d.lastSeq {
		d.lastSeq = last
		d.spilled = true
	}
	d.mu.Unlock()
	d.signal()
}

func (d *delivery) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// fetch waits for entries to deliver: due redeliveries first, then new
// entries in journal order.
func (d *delivery) fetch(ctx context.Context, limit int) ([]journal.Entry, error) {
	limit = max(limit, 1)
	for {
		out, next, err := d.take(ctx, limit)
		if err != nil || len(out) > 0 {
			return out, err
		}
		if err := d.waitForWork(ctx, next); err != nil {
			return nil, err
		}
	}
}

// waitForWork blocks until an append or a nak signals, a redelivery falls
// due (after next, when next > 0) or ctx ends.
func (d *delivery) waitForWork(ctx context.Context, next time.Duration) error {
	var timer <-chan time.Time
	if next > 0 {
		t := time.NewTimer(next)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-d.wake:
	case <-timer:
	}
	return nil
}

// take hands out up to limit entries; when there are none it says how
// long until the next redelivery is due (0: none scheduled).
func (d *delivery) take(ctx context.Context, limit int) ([]journal.Entry, time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, 0, journal.ErrClosed
	}
	now := d.now()
	var out []journal.Entry
	for len(out) < limit && len(d.naks) > 0 && !d.naks[0].due.After(now) {
		n := heap.Pop(&d.naks).(nak)
		f, ok := d.inflight[n.seq]
		if !ok || !f.nakked {
			continue
		}
		f.nakked = false
		f.deliveredAt = now
		f.e.Handouts++
		out = append(out, f.e)
	}
	if len(out) < limit && len(d.ready) == 0 && d.spilled {
		if err := d.refill(ctx, limit-len(out)); err != nil {
			return out, 0, err
		}
	}
	n := 0
	for ; n < len(d.ready) && len(out) < limit; n++ {
		e := d.ready[n]
		d.cursor = e.Seq
		if _, ok := d.decidedAhead[e.Seq]; ok {
			delete(d.decidedAhead, e.Seq)
			continue
		}
		e.Handouts = 1
		d.inflight[e.Seq] = &flight{e: e, deliveredAt: now}
		out = append(out, e)
	}
	d.ready = d.ready[n:]
	if len(d.ready) == 0 {
		d.ready = nil // let the backing array go
	}
	var next time.Duration
	if len(out) == 0 && len(d.naks) > 0 {
		next = max(d.naks[0].due.Sub(now), time.Millisecond)
	}
	return out, next, nil
}

// refill reads entries past the cursor back from the file. Called with mu
// held, so publish cannot add to ready meanwhile. It reads only up to
// lastSeq: entries committed but not yet published arrive through publish.
func (d *delivery) refill(ctx context.Context, n int) error {
	es, err := d.read(ctx, d.cursor, d.lastSeq, max(n, 256))
	if err != nil {
		return err
	}
	d.ready = append(d.ready, es...)
	if len(d.ready) == 0 || d.ready[len(d.ready)-1].Seq >= d.lastSeq {
		d.spilled = false
	}
	return nil
}

// ack forgets delivered entries.
func (d *delivery) ack(seqs ...uint64) {
	d.mu.Lock()
	for _, s := range seqs {
		delete(d.inflight, s)
	}
	d.mu.Unlock()
}

// nak schedules a redelivery after delay.
func (d *delivery) nak(seq uint64, delay time.Duration) {
	d.mu.Lock()
	f, ok := d.inflight[seq]
	if ok && !f.nakked {
		f.nakked = true
		heap.Push(&d.naks, nak{seq: seq, due: d.now().Add(delay)})
	}
	d.mu.Unlock()
	if ok {
		d.signal()
	}
}

// pending hands back, as a new delivery, entries delivered before t and
// not acknowledged since, in journal order.
func (d *delivery) pending(deliveredBefore time.Time, limit int) []journal.Entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	var stale []*flight
	for _, f := range d.inflight {
		if !f.nakked && f.deliveredAt.Before(deliveredBefore) {
			stale = append(stale, f)
		}
	}
	slices.SortFunc(stale, func(a, b *flight) int { return cmp.Compare(a.e.Seq, b.e.Seq) })
	if limit > 0 && len(stale) > limit {
		stale = stale[:limit]
	}
	now := d.now()
	out := make([]journal.Entry, len(stale))
	for i, f := range stale {
		f.deliveredAt = now
		f.e.Handouts++
		out[i] = f.e
	}
	return out
}

// unsaved returns the watermark, the highest seq at and below which every
// entry is acknowledged, and whether it differs from the one saved.
func (d *delivery) unsaved() (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.cursor
	for s := range d.inflight {
		if s-1 < w {
			w = s - 1
		}
	}
	return w, w != d.saved
}

// markSaved records that the watermark w is on disk.
func (d *delivery) markSaved(w uint64) {
	d.mu.Lock()
	d.saved = w
	d.mu.Unlock()
}

// savedMark is the watermark on disk: every entry at or below it has its
// outcome in the store.
func (d *delivery) savedMark() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.saved
}

// isPending says whether seq is still to be delivered or acknowledged.
func (d *delivery) isPending(seq uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, inflight := d.inflight[seq]
	return inflight || seq > d.cursor
}

// formInFlight returns the cursor and how many of a form's entries are in
// flight.
func (d *delivery) formInFlight(form string) (cursor uint64, n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.inflight {
		if f.e.Form == form {
			n++
		}
	}
	return d.cursor, n
}

// stats reports the backlog and the age of its oldest entry in memory;
// when the oldest is on disk only, probe is set and the caller reads its
// age from the file past cursor.
func (d *delivery) stats() (st journal.Stats, probe bool, cursor uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	st = journal.Stats{LastSeq: d.lastSeq, Backlog: int64(d.lastSeq-d.cursor) + int64(len(d.inflight))}
	var oldest *flight
	for _, f := range d.inflight {
		if oldest == nil || f.e.Seq < oldest.e.Seq {
			oldest = f
		}
	}
	switch {
	case oldest != nil:
		st.OldestPending = oldest.e.ReceivedAt
	case len(d.ready) > 0:
		st.OldestPending = d.ready[0].ReceivedAt
	}
	return st, oldest == nil && len(d.ready) == 0 && d.lastSeq > d.cursor, d.cursor
}

// close ends delivery: fetch answers journal.ErrClosed.
func (d *delivery) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.signal()
}

type nak struct {
	seq uint64
	due time.Time
}

type nakHeap []nak

func (h nakHeap) Len() int           { return len(h) }
func (h nakHeap) Less(a, b int) bool { return h[a].due.Before(h[b].due) }
func (h nakHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *nakHeap) Push(x any)        { *h = append(*h, x.(nak)) }
func (h *nakHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
