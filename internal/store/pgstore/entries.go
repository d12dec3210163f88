package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// Cancel marks a live entry cancelled, frees its claims and place, and
// promotes the waitlist.
func (s *Store) Cancel(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "cancel", form, id, `UPDATE entries SET status = 'cancelled' WHERE id = $1`, store.StatusCancelled)
}

// takeOut takes a live entry out — cancelled, or marked spam — with set
// (its new status, and decision for spam): its claims and place freed, its
// submission.cancelled event with status, and the waitlist promoted, in
// one transaction. The entry's row is locked first, so two of them on one
// entry do not both free a place.
func (s *Store) takeOut(ctx context.Context, op, form, id, set, status string) ([]string, error) {
	var promoted []string
	var refused error
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		promoted, refused = nil, nil
		var was string
		err := tx.QueryRow(ctx, `SELECT status FROM entries WHERE form = $1 AND id = $2 FOR UPDATE`, form, id).Scan(&was)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
			return nil
		}
		if err != nil {
			return err
		}
		if was != store.StatusStored && was != store.StatusWaitlisted && was != store.StatusPending {
			refused = fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotLive)
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(set, id)
		b.Queue(`SELECT formd_event($1, 'submission.cancelled', $2, (SELECT site FROM entries WHERE id = $1), $3, $4)`, id, form, status, micro(s.now()))
		b.Queue(`DELETE FROM claims WHERE entry_id = $1`, id)
		if was == store.StatusStored || was == store.StatusPending {
			b.Queue(`SELECT formd_free_place($1, $2)`, id, form)
		}
		b.Queue(`SELECT coalesce(array_agg(p), '{}') FROM formd_promote($1, $2) p`, form, micro(s.now())).QueryRow(func(r pgx.Row) error {
			return r.Scan(&promoted)
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return promoted, nil
}

// Entries reads a page of a form's entries, newest first.
func (s *Store) Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error) {
	where, args := entryFilter(q)
	args = append(args, store.PageSize(q.Limit))
	rows, err := s.pool.Query(ctx, `SELECT `+store.RowColumns+` FROM entries WHERE `+
		where+` ORDER BY seq DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
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
	rows, err := s.pool.Query(ctx, `SELECT `+store.EventColumns+` FROM events e WHERE e.entry_id = $1 ORDER BY e.seq`, entryID)
	if err != nil {
		return nil, classify("read history", err)
	}
	out, err := collect(rows, store.ScanEvent)
	if err != nil {
		return nil, classify("read history", err)
	}
	return out, nil
}

// MarkSpam takes a live entry out as spam, freeing its claims and place
// and promoting the waitlist.
func (s *Store) MarkSpam(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "mark spam", form, id, `UPDATE entries SET status = 'spam', decision = 'spam' WHERE id = $1`, store.StatusSpam)
}

// FindEntries lists entries whose data holds one of the needles.
func (s *Store) FindEntries(ctx context.Context, needles [][]byte, limit int) ([]store.EntryRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, site, form, key, seq FROM entries
		WHERE data IS NOT NULL AND EXISTS (SELECT 1 FROM unnest($1::bytea[]) n WHERE position(n IN data) > 0)
		ORDER BY received_at, id LIMIT $2`, needles, limit)
	if err != nil {
		return nil, classify("find entries", err)
	}
	out, err := collect(rows, store.ScanEntryRef)
	if err != nil {
		return nil, classify("find entries", err)
	}
	return out, nil
}

// Export streams a form's entries in arrival order, a page at a time by
// (seq, id) keyset, each page its own query so no transaction stays open
// while fn works.
func (s *Store) Export(ctx context.Context, form string, fn func(store.Row) error) error {
	return store.ExportPages(func(afterSeq int64, afterID string) ([]store.Row, error) {
		rows, err := s.pool.Query(ctx, `SELECT `+store.RowColumns+` FROM entries
			WHERE form = $1 AND (seq, id) > ($2, $3) ORDER BY seq, id LIMIT $4`, form, afterSeq, afterID, store.ExportPage)
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
