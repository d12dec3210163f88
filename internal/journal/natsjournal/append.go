package natsjournal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Append publishes the entry. In sync mode it returns once the stream has
// stored it (on a quorum of replicas) or found (form, key) there already;
// otherwise once it is handed to the connection (see appendAsync).
func (j *Journal) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	if j.isClosed() {
		return journal.Appended{}, journal.ErrClosed
	}
	select {
	case j.slots <- struct{}{}:
		defer func() { <-j.slots }()
	default:
		return journal.Appended{}, fmt.Errorf("append %s: %d appends waiting: %w", e.Form, cap(j.slots), journal.ErrOverloaded)
	}
	body, err := encode(e)
	if err != nil {
		return journal.Appended{}, fmt.Errorf("append %s: %w", e.Form, err)
	}
	msg := &nats.Msg{Subject: j.subject(e.Form, e.Key), Data: body, Header: nats.Header{}}
	pctx, cancel := context.WithTimeout(ctx, j.opts.PublishTimeout)
	defer cancel()
	if !sync {
		return j.appendAsync(pctx, e, msg)
	}
	ack, err := j.js.PublishMsg(pctx, msg, j.publishOpts(e)...)
	switch {
	case err == nil && !ack.Duplicate:
		e.Seq = ack.Sequence
		return journal.Appended{Entry: e}, nil
	case err == nil:
		// Inside the duplicate window: the ack names the first entry.
		first, err := j.first(pctx, e, ack.Sequence)
		if err != nil {
			return journal.Appended{}, err
		}
		return journal.Appended{Entry: first, Duplicate: true}, nil
	case isKeyTaken(err):
		// After the window: the stream refused a second message for the
		// key, so the first one is there to read.
		first, err := j.first(pctx, e, 0)
		if err != nil {
			return journal.Appended{}, err
		}
		return journal.Appended{Entry: first, Duplicate: true}, nil
	case ctx.Err() != nil:
		// The client left; the append may still have been stored, and a
		// retry with the same key finds it.
		return journal.Appended{}, ctx.Err()
	default:
		return journal.Appended{}, j.publishError(e, err)
	}
}

// appendAsync hands the entry to the connection without waiting for the
// stream, unless (form, key) is journaled already or queued here: then it
// reports that first entry, so that a retry is answered as the original.
// Until the stream answers for it, the entry waits in queued, where Lookup
// finds it; other instances find it once the stream has it. The lookup
// costs a round trip to the server, but not the stream's replication and
// fsync that a sync append waits for.
func (j *Journal) appendAsync(ctx context.Context, e journal.Entry, msg *nats.Msg) (journal.Appended, error) {
	first, found, err := j.Lookup(ctx, e.Form, e.Key)
	if err != nil {
		return journal.Appended{}, fmt.Errorf("append %s: %w", e.Form, err)
	}
	if found {
		return journal.Appended{Entry: first, Duplicate: true}, nil
	}
	id := msgID(e.Form, e.Key)
	j.queuedMu.Lock()
	if q, ok := j.queued[id]; ok {
		j.queuedMu.Unlock()
		return journal.Appended{Entry: q, Duplicate: true}, nil
	}
	j.queued[id] = e
	j.queuedMu.Unlock()
	if _, err := j.js.PublishMsgAsync(msg, j.publishOpts(e)...); err != nil {
		j.unqueue(id)
		return journal.Appended{}, j.publishError(e, err)
	}
	return journal.Appended{Entry: e}, nil
}

// unqueue forgets an async append once the stream has answered for it,
// or its publish failed.
func (j *Journal) unqueue(id string) {
	j.queuedMu.Lock()
	delete(j.queued, id)
	j.queuedMu.Unlock()
}

// first reads the entry already in the stream for e's (form, key), by its
// sequence when known, else by subject.
func (j *Journal) first(ctx context.Context, e journal.Entry, seq uint64) (journal.Entry, error) {
	var (
		raw *jetstream.RawStreamMsg
		err error
	)
	// The first append of a key racing this one may be a moment from
	// being readable on the leader; a short wait covers it.
	for attempt := 0; ; attempt++ {
		if seq > 0 {
			raw, err = j.stream.GetMsg(ctx, seq)
		} else {
			raw, err = j.stream.GetLastMsgForSubject(ctx, j.keySubject(e.Form, e.Key))
		}
		if err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) || attempt == 20 {
			break
		}
		select {
		case <-ctx.Done():
			return journal.Entry{}, fmt.Errorf("append %s: read first entry: %w: %w", e.Form, journal.ErrUnavailable, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err != nil {
		return journal.Entry{}, fmt.Errorf("append %s: read first entry: %w: %w", e.Form, journal.ErrUnavailable, err)
	}
	first, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("append %s: %w", e.Form, err)
	}
	if first.Form != e.Form || first.Key != e.Key {
		return journal.Entry{}, fmt.Errorf("append %s: entry %d under this key's subject is for another key: %w", e.Form, raw.Sequence, journal.ErrUnavailable)
	}
	return first, nil
}

// publishOpts are every append's: its Nats-Msg-Id for the duplicate
// window, the stream, and that no entry of (form, key) is there yet under
// any site token (keySubject, so that entries of earlier releases, written
// under their form's site, count too). The server checks the last by its
// code, 10071, with no window, and refuses the append atomically.
func (j *Journal) publishOpts(e journal.Entry) []jetstream.PublishOpt {
	return []jetstream.PublishOpt{
		jetstream.WithMsgID(msgID(e.Form, e.Key)),
		jetstream.WithExpectStream(j.opts.Stream),
		jetstream.WithExpectLastSequenceForSubject(0, j.keySubject(e.Form, e.Key)),
	}
}

// codeStoreFailed (the server's JSStreamStoreFailedF, which nats.go does
// not name) is the stream refusing to store a message by its limits:
// maximum messages or bytes, with DiscardNew. Its per-subject limit never
// refuses an append: the expected-sequence check (isKeyTaken) comes first.
const codeStoreFailed jetstream.ErrorCode = 10077

// hasCode says err is a JetStream API error with one of codes.
func hasCode(err error, codes ...jetstream.ErrorCode) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && slices.Contains(codes, api.ErrorCode)
}

// isKeyTaken says the stream refused a message because (form, key)
// already has one: the expected last sequence (0) was wrong, 10071, or
// 10164 as replicated streams report it (also while an append of the key
// is in flight on the leader; first waits for that one to be readable).
func isKeyTaken(err error) bool {
	return hasCode(err, jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// publishError maps a failed publish to what intake answers: overloaded
// when the stream or the connection's buffers are full, unavailable when
// the servers did not answer (no leader, no responders, timeouts, a lost
// connection).
func (j *Journal) publishError(e journal.Entry, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrTooManyStalledMsgs), errors.Is(err, nats.ErrSlowConsumer), hasCode(err, codeStoreFailed):
		return fmt.Errorf("append %s: %w: %w", e.Form, journal.ErrOverloaded, err)
	case errors.Is(err, nats.ErrConnectionClosed) && j.isClosed():
		return journal.ErrClosed
	default:
		return fmt.Errorf("append %s: %w: %w", e.Form, journal.ErrUnavailable, err)
	}
}

// Lookup reads the entry for (form, key): an async append of this
// instance that the stream has not answered for yet (with Seq 0), else the
// last (and only) message on its subject, under any site token
// (keySubject).
func (j *Journal) Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error) {
	j.queuedMu.Lock()
	q, queued := j.queued[msgID(form, key)]
	j.queuedMu.Unlock()
	if queued && q.Form == form && q.Key == key {
		return q, true, nil
	}
	raw, err := j.stream.GetLastMsgForSubject(ctx, j.keySubject(form, key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return journal.Entry{}, false, nil
	}
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	e, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w", err)
	}
	if e.Form != form || e.Key != key {
		return journal.Entry{}, false, nil
	}
	return e, true, nil
}
