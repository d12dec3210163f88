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

// Reading the journal: deliveries (Fetch, Ack, Nak, Pending), lookups
// by key, filtered reads and stats.

const entryColumns = `seq, form, key, site, id, received_at, fingerprint, spam, claims, data, digest, checks`

// Fetch waits for entries to deliver: due redeliveries first, then new
// entries in journal order.
func (j *Journal) Fetch(ctx context.Context, limit int) ([]journal.Entry, error) {
	return j.delivery.fetch(ctx, limit)
}

// readAfter reads back up to n committed entries with after < seq <= upto,
// in order: those delivery could not keep in memory.
func (j *Journal) readAfter(ctx context.Context, after, upto uint64, n int) ([]journal.Entry, error) {
	return j.readPage(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, []any{after, upto, n})
}

// Ack forgets delivered entries: they have their outcome in the store.
func (j *Journal) Ack(_ context.Context, seqs ...uint64) error {
	j.delivery.ack(seqs...)
	return nil
}

// Nak schedules a redelivery after delay.
func (j *Journal) Nak(_ context.Context, seq uint64, delay time.Duration) error {
	j.delivery.nak(seq, delay)
	return nil
}

// Pending hands back, as a new delivery, entries delivered before t and not
// acknowledged since.
func (j *Journal) Pending(_ context.Context, deliveredBefore time.Time, limit int) ([]journal.Entry, error) {
	return j.delivery.pending(deliveredBefore, limit), nil
}

func (j *Journal) saveWatermark() {
	w, changed := j.delivery.unsaved()
	if !changed {
		return
	}
	if _, err := j.wdb.Exec(`UPDATE journal_meta SET v = ? WHERE k = 'acked_upto'`, w); err != nil {
		j.opts.Logger.Warn("journal watermark not saved", "err", err)
		return
	}
	j.delivery.markSaved(w)
}

// Lookup finds the entry for (form, key), including an async append still
// waiting for the writer (with Seq 0).
func (j *Journal) Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error) {
	j.queuedMu.Lock()
	q, ok := j.queued[queuedKey{form, key}]
	j.queuedMu.Unlock()
	if ok {
		return q, true, nil
	}
	e, err := scanEntry(j.rdb.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE form = ? AND key = ?`, form, key))
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Entry{}, false, nil
	}
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	return e, true, nil
}

// Read calls fn for every entry matching f, in journal order, a page at a
// time so that no read transaction stays open while fn works.
func (j *Journal) Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error {
	var where []string
	var args []any
	if f.Form != "" {
		where = append(where, "form = ?")
		args = append(args, f.Form)
	}
	if f.Site != "" {
		where = append(where, "site = ?")
		args = append(args, f.Site)
	}
	if !f.Since.IsZero() {
		where = append(where, "received_at >= ?")
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		where = append(where, "received_at < ?")
		args = append(args, f.Until.UnixMicro())
	}
	q := `SELECT ` + entryColumns + ` FROM journal_entries WHERE seq > ?`
	for _, w := range where {
		q += " AND " + w
	}
	q += ` ORDER BY seq LIMIT 500`
	after := f.AfterSeq
	for {
		page, err := j.readPage(ctx, q, append([]any{after}, args...))
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(page) < 500 {
			return nil
		}
	}
}

// readPage reads the entries that q (a SELECT of entryColumns) finds with
// args, in its order.
func (j *Journal) readPage(ctx context.Context, q string, args []any) ([]journal.Entry, error) {
	rows, err := j.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer rows.Close()
	var page []journal.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return page, nil
}

// Stats reports the backlog and the age of its oldest entry.
func (j *Journal) Stats(ctx context.Context) (journal.Stats, error) {
	st, probe, cursor := j.delivery.stats()
	if probe {
		var us int64
		err := j.rdb.QueryRowContext(ctx, `SELECT received_at FROM journal_entries WHERE seq > ? ORDER BY seq LIMIT 1`, cursor).Scan(&us)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return st, fmt.Errorf("journal stats: %w", err)
		}
		if err == nil {
			st.OldestPending = time.UnixMicro(us)
		}
	}
	return st, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanEntry(s scanner) (journal.Entry, error) {
	var (
		e      journal.Entry
		us     int64
		fp     []byte
		claims string
		data   []byte
		digest []byte
		checks []byte
	)
	if err := s.Scan(&e.Seq, &e.Form, &e.Key, &e.Site, &e.ID, &us, &fp, &e.Spam, &claims, &data, &digest, &checks); err != nil {
		return e, err
	}
	if err := journal.SetChecks(&e, checks); err != nil {
		return e, fmt.Errorf("entry %d: read its checks: %w", e.Seq, err)
	}
	e.ReceivedAt = time.UnixMicro(us)
	copy(e.Fingerprint[:], fp)
	copy(e.Digest[:], digest)
	if claims != "" {
		e.Claims = strings.Split(claims, ",")
	}
	e.Data = data
	return e, nil
}
