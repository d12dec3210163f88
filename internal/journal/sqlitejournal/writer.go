package sqlitejournal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/journal"
)

// The single writer: appends are queued to one goroutine that commits
// them in batches (and, with the fast path, decides them in the same
// transaction).

// DecideAtAppend installs the embedded fast path: from now on, sync
// entries are decided by fn in the transaction that appends them, and the
// append returns once that commit has (their outcomes already handed to
// those waiting). Only on a journal opened on the shared writer.
func (j *Journal) DecideAtAppend(fn journal.Decide) error {
	if !j.shared {
		return errors.New("decide at append: the journal has no shared writer (Options.Writer)")
	}
	j.decide.Store(&fn)
	return nil
}

// Append queues the entry for the writer. In sync mode it returns once the
// entry is committed and fsync'd (or found already there); otherwise it
// returns at once, before anything is durable, unless the key is queued or
// committed already: then it reports that first entry.
func (j *Journal) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	req := &appendReq{e: e}
	if sync {
		req.done = make(chan appendRes, 1)
	} else {
		first, dup, err := j.queueAsync(ctx, e)
		if err != nil || dup {
			return journal.Appended{Entry: first, Duplicate: dup}, err
		}
	}
	j.closeMu.RLock()
	if j.closing {
		j.closeMu.RUnlock()
		j.unqueue(req)
		return journal.Appended{}, journal.ErrClosed
	}
	select {
	case j.queue <- req:
		j.closeMu.RUnlock()
	default:
		j.closeMu.RUnlock()
		j.unqueue(req)
		return journal.Appended{}, journal.ErrOverloaded
	}
	if !sync {
		return journal.Appended{Entry: e}, nil
	}
	select {
	case r := <-req.done:
		return r.a, r.err
	case <-ctx.Done():
		// The append may still commit; a retry with the same key finds it.
		return journal.Appended{}, ctx.Err()
	}
}

func (j *Journal) writeLoop() {
	defer j.writer.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	batch := make([]*appendReq, 0, j.opts.MaxBatch)
	for {
		select {
		case req, ok := <-j.queue:
			if !ok {
				j.saveWatermark()
				return
			}
			batch = append(batch[:0], req)
		drain:
			for len(batch) < j.opts.MaxBatch {
				select {
				case r, ok := <-j.queue:
					if !ok {
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			j.commit(batch)
			clear(batch)
		case <-tick.C:
			j.saveWatermark()
		case done := <-j.ping:
			close(done)
		}
	}
}

// Alive asks the writer to answer between two commits: it does at once
// when idle, after its commit when busy, and not while a commit hangs.
func (j *Journal) Alive(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case j.ping <- done:
	case <-ctx.Done():
		return fmt.Errorf("journal writer: no answer: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("journal writer: no answer: %w", ctx.Err())
	}
}

// queueAsync records an async append in queued, or finds the entry
// queued or committed for its key. The writer's insert alone keeps (form,
// key) unique; the lookup is there so that a retry is answered as the
// original, as it is for a sync append. When entries left the queue
// while it looked (committed: unqueued counts them), one of them may be
// the key's, committed after the lookup read: it looks again.
func (j *Journal) queueAsync(ctx context.Context, e journal.Entry) (journal.Entry, bool, error) {
	j.closeMu.RLock()
	closing := j.closing
	j.closeMu.RUnlock()
	if closing {
		return journal.Entry{}, false, journal.ErrClosed
	}
	k := queuedKey{e.Form, e.Key}
	for {
		j.queuedMu.Lock()
		gen := j.unqueued
		j.queuedMu.Unlock()
		first, found, err := j.Lookup(ctx, e.Form, e.Key)
		if err != nil || found {
			return first, found, err
		}
		if j.afterLookup != nil {
			j.afterLookup()
		}
		j.queuedMu.Lock()
		if q, ok := j.queued[k]; ok {
			j.queuedMu.Unlock()
			return q, true, nil
		}
		if j.unqueued == gen {
			j.queued[k] = e
			j.queuedMu.Unlock()
			return journal.Entry{}, false, nil
		}
		j.queuedMu.Unlock()
	}
}

// unqueue forgets an async append once it is committed (or refused).
func (j *Journal) unqueue(reqs ...*appendReq) {
	j.queuedMu.Lock()
	for _, r := range reqs {
		if r.done == nil {
			k := queuedKey{r.e.Form, r.e.Key}
			if q, ok := j.queued[k]; ok && q.ID == r.e.ID {
				delete(j.queued, k)
				j.unqueued++
			}
		}
	}
	j.queuedMu.Unlock()
}

// commit writes one batch in one transaction: one fsync for all of it.
func (j *Journal) commit(batch []*appendReq) {
	ctx := context.Background()
	res := make([]appendRes, len(batch))
	decided := make([]bool, len(batch))
	settled, err := j.writeBatch(ctx, batch, res, decided)
	defer j.unqueue(batch...)
	if err != nil {
		j.failing.Store(&err)
		j.opts.Logger.Error("journal commit failed", "err", err, "entries", len(batch))
		if j.shared {
			// Attached files commit one after the other: the journal's
			// part may be in although the commit failed. What is in is
			// delivered to the processor (a retry of such a key waits
			// for its outcome).
			j.recoverTail(ctx)
		}
		for _, r := range batch {
			if r.done != nil {
				r.done <- appendRes{err: fmt.Errorf("%w: %w", journal.ErrUnavailable, err)}
			}
		}
		return
	}
	j.failing.Store(nil)
	if settled != nil {
		settled()
	}
	var fresh []published
	for i := range batch {
		if !res[i].a.Duplicate {
			fresh = append(fresh, published{e: res[i].a.Entry, decided: decided[i]})
		}
	}
	j.delivery.publish(fresh)
	for i, r := range batch {
		if r.done != nil {
			r.done <- res[i]
		}
	}
}

// writeBatch inserts the batch's entries and, on the fast path, decides
// the new sync ones, in one transaction; decided says which were.
func (j *Journal) writeBatch(ctx context.Context, batch []*appendReq, res []appendRes, decided []bool) (func(), error) {
	tx, err := j.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	ins := tx.StmtContext(ctx, j.insert)
	defer ins.Close()
	var syncNew []int // the batch's new sync entries, by index
	for i, r := range batch {
		e := r.e
		// Exec reports the new rowid (the position) and whether a row went
		// in, without the cost of reading RETURNING rows.
		res1, err := ins.ExecContext(ctx, e.Form, e.Key, e.Site, e.ID, e.ReceivedAt.UnixMicro(), e.Fingerprint[:],
			e.Spam, strings.Join(e.Claims, ","), []byte(e.Data), e.Digest[:], journal.Checks(e))
		if err != nil {
			return nil, fmt.Errorf("insert entry: %w", err)
		}
		if n, _ := res1.RowsAffected(); n == 1 {
			seq, _ := res1.LastInsertId()
			e.Seq = uint64(seq)
			res[i].a = journal.Appended{Entry: e}
			if r.done != nil {
				syncNew = append(syncNew, i)
			}
			continue
		}
		prev, err := scanEntry(tx.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE form = ? AND key = ?`, e.Form, e.Key))
		if err != nil {
			return nil, fmt.Errorf("read existing entry: %w", err)
		}
		res[i].a = journal.Appended{Entry: prev, Duplicate: true}
	}
	var settled func()
	if fn := j.decide.Load(); fn != nil && len(syncNew) > 0 {
		es := make([]journal.Entry, len(syncNew))
		for k, i := range syncNew {
			es[k] = res[i].a.Entry
		}
		var ok []bool
		ok, settled = (*fn)(ctx, tx, es)
		for k, i := range syncNew {
			decided[i] = ok[k]
		}
	}
	if err := tx.Commit(); err != nil {
		clear(decided)
		return nil, fmt.Errorf("commit: %w", err)
	}
	return settled, nil
}

// recoverTail makes entries committed by a failed shared commit
// deliverable: past lastSeq, they are read back from the file.
func (j *Journal) recoverTail(ctx context.Context) {
	var last sql.NullInt64
	if err := j.rdb.QueryRowContext(ctx, `SELECT MAX(seq) FROM journal_entries`).Scan(&last); err != nil {
		j.opts.Logger.Warn("journal: after a failed commit, the last position could not be read; a restart delivers what is there", "err", err)
		return
	}
	j.delivery.committedUpTo(uint64(last.Int64))
}
