package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/formd/formd/internal/store"
)

// Cancel marks a live entry cancelled, frees its claims and place, and
// promotes the waitlist.
func (s *Store) Cancel(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "cancel", form, id, `UPDATE entries SET status = 'cancelled' WHERE id = ?`, store.StatusCancelled)
}

// takeOut takes a live entry out — cancelled, or marked spam — with set
// (its new status, and decision for spam): its claims and place freed, its
// submission.cancelled event with status, and the waitlist promoted, in
// one transaction (the one writer serializes them).
func (s *Store) takeOut(ctx context.Context, op, form, id, set, status string) ([]string, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var was string
	err = tx.QueryRowContext(ctx, `SELECT status FROM entries WHERE form = ? AND id = ?`, form, id).Scan(&was)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(op, err)
	}
	if was != store.StatusStored && was != store.StatusWaitlisted && was != store.StatusPending {
		return nil, fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotLive)
	}
	// The claims go first: releasing reads the entry's own list of them.
	if _, err := tx.ExecContext(ctx, releaseClaims, id); err != nil {
		return nil, classify(op+": release claims", err)
	}
	if _, err := tx.ExecContext(ctx, set, id); err != nil {
		return nil, classify(op, err)
	}
	now := s.now()
	if err := recordEvent(ctx, tx, id, store.EventCancelled, status, now); err != nil {
		return nil, classify(op+": event", err)
	}
	if was == store.StatusStored || was == store.StatusPending {
		if _, err := tx.ExecContext(ctx, `UPDATE capacity SET taken = taken - 1 WHERE form = ? AND taken > 0`, form); err != nil {
			return nil, classify(op+": free place", err)
		}
		if err := freeOptionPlace(ctx, tx, form, id); err != nil {
			return nil, classify(op+": free the option's place", err)
		}
	}
	promoted, err := promote(ctx, tx, form, now)
	if err != nil {
		return nil, classify(op+": promote", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, classify(op+": commit", err)
	}
	return promoted, nil
}

// Entries reads a page of a form's entries, newest first.
func (s *Store) Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error) {
	where, args := entryFilter(q)
	args = append(args, store.PageSize(q.Limit))
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.RowColumns+` FROM entries WHERE `+
		where+` ORDER BY seq DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, classify("list entries", err)
	}
	out, err := collect(rows, store.ScanRow)
	if err != nil {
		return nil, classify("list entries", err)
	}
	return out, nil
}

// History lists an entry's events, oldest first.
func (s *Store) History(ctx context.Context, entryID string) ([]store.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.EventColumns+` FROM events e WHERE e.entry_id = ? ORDER BY e.seq`, entryID)
	if err != nil {
		return nil, classify("read history", err)
	}
	out, err := collect(rows, store.ScanEvent)
	if err != nil {
		return nil, classify("read history", err)
	}
	return out, nil
}

// MarkSpam takes a live entry out as spam: its claims and place are
// freed, the waitlist promoted, and its decision becomes spam (a retry of
// its key is answered "received").
func (s *Store) MarkSpam(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "mark spam", form, id, `UPDATE entries SET status = 'spam', decision = 'spam' WHERE id = ?`, store.StatusSpam)
}

// Export streams a form's entries in arrival order, a page at a time, by
// (seq, id) keyset: entries sharing a seq may straddle two pages.
func (s *Store) Export(ctx context.Context, form string, fn func(store.Row) error) error {
	return store.ExportPages(func(afterSeq int64, afterID string) ([]store.Row, error) {
		rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.RowColumns+` FROM entries
			WHERE form = ? AND (seq, id) > (?, ?) ORDER BY seq, id LIMIT ?`, form, afterSeq, afterID, store.ExportPage)
		if err != nil {
			return nil, classify("export", err)
		}
		page, err := collect(rows, store.ScanRow)
		if err != nil {
			return nil, classify("export", err)
		}
		return page, nil
	}, fn)
}

// FindEntries lists entries whose data holds one of the needles.
func (s *Store) FindEntries(ctx context.Context, needles [][]byte, limit int) ([]store.EntryRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	holds, args := holdsAny(needles)
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, site, form, key, seq FROM entries WHERE data IS NOT NULL AND `+
		holds+` ORDER BY received_at, id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, classify("find entries", err)
	}
	out, err := collect(rows, store.ScanEntryRef)
	if err != nil {
		return nil, classify("find entries", err)
	}
	return out, nil
}
