package natsjournal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/loop"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type flight struct {
	msg         jetstream.Msg
	e           journal.Entry
	deliveredAt time.Time
}

// Fetch waits for entries to process and leases them to this instance.
// Transient failures (a lost connection, no consumer leader) are waited
// out here, so the processor only sees ctx's end or ErrClosed.
func (j *Journal) Fetch(ctx context.Context, limit int) ([]journal.Entry, error) {
	limit = max(limit, 1)
	failures := 0
	for {
		if j.isClosed() {
			return nil, journal.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msgs, err := j.pull(ctx, limit)
		if err != nil {
			if ctx.Err() != nil || j.isClosed() {
				continue
			}
			if failures%50 == 0 {
				j.opts.Logger.Warn("journal fetch failed; retrying", "err", err, "failures", failures+1)
			}
			failures++
			wait(ctx, min(time.Duration(failures)*50*time.Millisecond, time.Second))
			continue
		}
		if out := j.lease(msgs); len(out) > 0 {
			return out, nil
		}
	}
}

// pull takes what is ready at once; when nothing is, it waits up to
// FetchWait for one entry, lingers FetchLinger for more, and then takes
// what else is ready. One fetch an instance asks the server at a time:
// the server hands each waiting pull request an entry of its own, so
// every worker of every instance waiting would split the arrivals into
// batches of one, each a store transaction, an ack and pull requests of
// its own, and the cost of a submission would grow with the instances.
// It starts with a wait when its last pull drained what was ready, saving
// the request that would find nothing.
func (j *Journal) pull(ctx context.Context, limit int) ([]jetstream.Msg, error) {
	select {
	case j.pulling <- struct{}{}:
		defer func() { <-j.pulling }()
	case <-ctx.Done():
		return nil, nil
	}
	if j.backlog {
		got, err := j.take(limit)
		j.backlog = len(got) == limit
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	var got []jetstream.Msg
	w := j.opts.FetchWait
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)*9/10)
	}
	if w < 5*time.Millisecond {
		<-ctx.Done()
		return nil, nil
	}
	b, err := j.cons.Fetch(1, jetstream.FetchMaxWait(w))
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-b.Messages():
		if !ok {
			return nil, ignorable(b.Error())
		}
		got = append(got, m)
	case <-ctx.Done():
		// The pull request is still open on the server: hand back
		// whatever it delivers rather than strand it until AckWait.
		drain := func() {
			for m := range b.Messages() {
				_ = m.Nak()
			}
		}
		j.mu.Lock()
		if j.closed {
			j.mu.Unlock()
			drain()
		} else {
			j.drainers.Go(drain)
			j.mu.Unlock()
		}
		return nil, nil
	}
	if limit > 1 {
		if j.opts.FetchLinger > 0 {
			wait(ctx, j.opts.FetchLinger)
		}
		more, err := j.take(limit - 1)
		if err != nil {
			j.opts.Logger.Debug("journal fetch: topping up a batch failed", "err", err)
		}
		got = append(got, more...)
	}
	j.backlog = len(got) == limit
	return got, nil
}

// take fetches what the consumer has ready, without waiting.
func (j *Journal) take(limit int) ([]jetstream.Msg, error) {
	b, err := j.cons.FetchNoWait(limit)
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, ignorable(b.Error())
}

// ignorable drops the pull outcomes that only mean "nothing now".
func ignorable(err error) error {
	if err == nil || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrConsumerLeadershipChanged) || errors.Is(err, jetstream.ErrBatchCompleted) {
		return nil
	}
	return err
}

// lease turns delivered messages into entries held by this instance.
func (j *Journal) lease(msgs []jetstream.Msg) []journal.Entry {
	now := j.opts.Now()
	out := make([]journal.Entry, 0, len(msgs))
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			j.opts.Logger.Error("journal message without metadata; skipped", "subject", m.Subject(), "err", err)
			continue
		}
		e, err := decode(md.Sequence.Stream, m.Data())
		if err != nil {
			// Not an entry formd wrote: stop its delivery, keep it in the
			// stream as evidence.
			j.opts.Logger.Error("journal message is not a formd entry; no more deliveries", "seq", md.Sequence.Stream, "err", err)
			_ = m.Term()
			continue
		}
		e.Handouts = int(md.NumDelivered)
		j.inflight[e.Seq] = &flight{msg: m, e: e, deliveredAt: now}
		out = append(out, e)
	}
	return out
}

// leaseLoop tells the server, every third of AckWait, that the entries
// this instance holds are still in progress.
func (j *Journal) leaseLoop(ctx context.Context) {
	loop.Every(ctx, max(j.opts.AckWait/3, 50*time.Millisecond), func() {
		j.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(j.inflight))
		for _, f := range j.inflight {
			msgs = append(msgs, f.msg)
		}
		j.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress() // an entry acked meanwhile refuses it; that is fine
		}
	})
}

// Ack tells the server the entries are decided. Sequences this instance
// does not hold (replayed entries, or ones another instance holds) are
// left alone, as in the embedded journal.
func (j *Journal) Ack(_ context.Context, seqs ...uint64) error {
	j.mu.Lock()
	msgs := make([]jetstream.Msg, 0, len(seqs))
	for _, s := range seqs {
		if f, ok := j.inflight[s]; ok {
			msgs = append(msgs, f.msg)
			delete(j.inflight, s)
		}
	}
	j.mu.Unlock()
	var errs []error
	for _, m := range msgs {
		if err := m.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			errs = append(errs, err)
		}
	}
	if len(msgs) > 0 {
		errs = append(errs, j.nc.FlushTimeout(5*time.Second))
	}
	if err := errors.Join(errs...); err != nil {
		// Unacknowledged entries come again and are replayed by the store.
		return fmt.Errorf("ack journal entries: %w", err)
	}
	return nil
}

// Nak hands an entry back for a redelivery after delay.
func (j *Journal) Nak(_ context.Context, seq uint64, delay time.Duration) error {
	j.mu.Lock()
	f, ok := j.inflight[seq]
	delete(j.inflight, seq)
	j.mu.Unlock()
	if !ok {
		return nil
	}
	if err := f.msg.NakWithDelay(max(delay, 0)); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return fmt.Errorf("nak journal entry %d: %w", seq, err)
	}
	return nil
}

// Pending hands back, as a new delivery, the entries this instance has held
// since before t without a decision. Entries held by a dead instance come
// back from the server after AckWait; those need no reconciler.
func (j *Journal) Pending(_ context.Context, deliveredBefore time.Time, limit int) ([]journal.Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var stale []*flight
	for _, f := range j.inflight {
		if f.deliveredAt.Before(deliveredBefore) {
			stale = append(stale, f)
		}
	}
	slices.SortFunc(stale, func(a, b *flight) int {
		switch {
		case a.e.Seq < b.e.Seq:
			return -1
		case a.e.Seq > b.e.Seq:
			return 1
		}
		return 0
	})
	if limit > 0 && len(stale) > limit {
		stale = stale[:limit]
	}
	now := j.opts.Now()
	out := make([]journal.Entry, len(stale))
	for i, f := range stale {
		f.deliveredAt = now
		f.e.Handouts++
		out[i] = f.e
	}
	return out, nil
}

// Stats reports the consumer's backlog across every instance: entries not
// yet delivered plus those delivered and not acknowledged.
func (j *Journal) Stats(ctx context.Context) (journal.Stats, error) {
	ci, err := j.cons.Info(ctx)
	if err != nil {
		return journal.Stats{}, fmt.Errorf("journal stats: %w: %w", journal.ErrUnavailable, err)
	}
	si, err := j.stream.Info(ctx)
	if err != nil {
		return journal.Stats{}, fmt.Errorf("journal stats: %w: %w", journal.ErrUnavailable, err)
	}
	st := journal.Stats{Backlog: int64(ci.NumPending) + int64(ci.NumAckPending), LastSeq: si.State.LastSeq}
	if st.Backlog > 0 {
		// Above the ack floor, the first entry is the oldest one that may
		// be unacknowledged.
		if raw, err := j.stream.GetMsg(ctx, ci.AckFloor.Stream+1); err == nil {
			if e, err := decode(raw.Sequence, raw.Data); err == nil {
				st.OldestPending = e.ReceivedAt
			}
		}
	}
	return st, nil
}

func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
