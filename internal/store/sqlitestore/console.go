package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
)

// entryFilter is the WHERE clause of a page of a form's entries (package
// store's EntryQuery), shared by Entries-like reads.
func entryFilter(q store.EntryQuery) (string, []any) {
	where := []string{"form = ?"}
	args := []any{q.Form}
	if len(q.Statuses) > 0 {
		where = append(where, "status IN (?"+strings.Repeat(",?", len(q.Statuses)-1)+")")
		for _, st := range q.Statuses {
			args = append(args, st)
		}
	}
	if !q.Since.IsZero() {
		where, args = append(where, "received_at >= ?"), append(args, q.Since.UnixMicro())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "received_at < ?"), append(args, q.Until.UnixMicro())
	}
	if q.Before != (store.Cursor{}) {
		where, args = append(where, "(seq, id) < (?, ?)"), append(args, q.Before.Seq, q.Before.ID)
	}
	return strings.Join(where, " AND "), args
}

// CountByStatus counts a form's entries by status, from the
// (form, status, seq) index alone.
func (s *Store) CountByStatus(ctx context.Context, form string) (store.StatusCounts, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT status, count(*) FROM entries WHERE form = ? GROUP BY status`, form)
	if err != nil {
		return nil, classify("count entries", err)
	}
	defer rows.Close()
	out := store.StatusCounts{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, classify("count entries", err)
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, classify("count entries", err)
	}
	return out, nil
}

// EntriesPerMinute counts a form's entries by minute received.
func (s *Store) EntriesPerMinute(ctx context.Context, form string, since, until time.Time) ([]store.MinuteCount, error) {
	const minute = int64(time.Minute / time.Microsecond)
	rows, err := s.rdb.QueryContext(ctx, `SELECT received_at / ?1 AS m, count(*) FROM entries
		WHERE form = ?2 AND received_at >= ?3 AND received_at < ?4 GROUP BY m ORDER BY m`,
		minute, form, since.UnixMicro(), until.UnixMicro())
	if err != nil {
		return nil, classify("count entries per minute", err)
	}
	out, err := collect(rows, store.ScanMinuteCount)
	if err != nil {
		return nil, classify("count entries per minute", err)
	}
	return out, nil
}

// SearchEntries reads at most maxScan entries of the page's window, newest
// first, and keeps those whose data holds a needle. The bound is the
// maxScan-th entry of the window, found on the index; the search reads no
// further than it.
func (s *Store) SearchEntries(ctx context.Context, q store.EntryQuery, needles [][]byte, maxScan int) ([]store.Row, store.Cursor, error) {
	if len(needles) == 0 {
		return nil, store.Cursor{}, errors.New("search entries: nothing to search for")
	}
	maxScan = min(max(maxScan, 1), store.MaxSearchScan)
	where, args := entryFilter(q)
	var bound store.Cursor
	err := s.rdb.QueryRowContext(ctx, `SELECT seq, id FROM entries WHERE `+where+` ORDER BY seq DESC, id DESC LIMIT 1 OFFSET ?`,
		append(args, maxScan-1)...).Scan(&bound.Seq, &bound.ID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, store.Cursor{}, classify("search entries", err)
	}
	if bound != (store.Cursor{}) {
		where, args = where+" AND (seq, id) >= (?, ?)", append(args, bound.Seq, bound.ID)
	}
	holds, needleArgs := holdsAny(needles)
	page := store.PageSize(q.Limit)
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.RowColumns+` FROM entries WHERE `+where+
		` AND data IS NOT NULL AND `+holds+` ORDER BY seq DESC, id DESC LIMIT ?`, append(append(args, needleArgs...), page)...)
	if err != nil {
		return nil, store.Cursor{}, classify("search entries", err)
	}
	out, err := collect(rows, store.ScanRow)
	if err != nil {
		return nil, store.Cursor{}, classify("search entries", err)
	}
	return out, store.SearchNext(out, page, bound), nil
}

// Entry reads one entry of a form.
func (s *Store) Entry(ctx context.Context, form, id string) (store.EntryDetail, error) {
	d, err := store.ScanDetail(s.rdb.QueryRowContext(ctx, `SELECT `+store.DetailColumns+` FROM entries WHERE form = ? AND id = ?`, form, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("read entry %s/%s: %w", form, id, store.ErrNotFound)
	}
	if err != nil {
		return d, classify("read entry", err)
	}
	return d, nil
}

// ArrivalStats gives a form's arrival rate by hour.
func (s *Store) ArrivalStats(ctx context.Context, form string, since, until time.Time) ([]store.ArrivalHour, error) {
	const hour = int64(time.Hour / time.Microsecond)
	rows, err := s.rdb.QueryContext(ctx, `
		SELECT h, sum(started), sum(reached), sum(received), sum(stored) FROM (
			SELECT a.reported_at / ?1 AS h, 1 AS started,
				EXISTS (SELECT 1 FROM entries e WHERE e.form = a.form AND e.key = a.key) AS reached, 0 AS received, 0 AS stored
			FROM arrivals a WHERE a.form = ?2 AND a.reported_at >= ?3 AND a.reported_at < ?4
			UNION ALL
			SELECT received_at / ?1, 0, 0, 1, decision IN ('stored', 'waitlisted')
			FROM entries WHERE form = ?2 AND received_at >= ?3 AND received_at < ?4
		) GROUP BY h ORDER BY h`, hour, form, since.UnixMicro(), until.UnixMicro())
	if err != nil {
		return nil, classify("arrival stats", err)
	}
	out, err := collect(rows, store.ScanArrivalHour)
	if err != nil {
		return nil, classify("arrival stats", err)
	}
	return out, nil
}

// UnreceivedArrivals lists keys reported pressed that have no entry.
func (s *Store) UnreceivedArrivals(ctx context.Context, form string, since, until time.Time, limit int) ([]store.Arrival, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.ArrivalColumns+` FROM arrivals a
		WHERE a.form = ? AND a.reported_at >= ? AND a.reported_at < ?
			AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.form = a.form AND e.key = a.key)
		ORDER BY a.reported_at, a.key LIMIT ?`, form, since.UnixMicro(), until.UnixMicro(), limit)
	if err != nil {
		return nil, classify("unreceived arrivals", err)
	}
	out, err := collect(rows, store.ScanArrival)
	if err != nil {
		return nil, classify("unreceived arrivals", err)
	}
	return out, nil
}

// EntriesWithoutEvent lists entries a decision made whose first event is
// missing.
func (s *Store) EntriesWithoutEvent(ctx context.Context, form string, limit int) ([]store.EntryRef, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.id, e.site, e.form, e.key, e.seq FROM entries e
		WHERE (?1 = '' OR e.form = ?1) AND e.status IN ('stored', 'waitlisted', 'spam', 'cancelled')
			AND NOT EXISTS (SELECT 1 FROM events v WHERE v.entry_id = e.id)
		ORDER BY e.seq LIMIT ?2`, form, limit)
	if err != nil {
		return nil, classify("entries without event", err)
	}
	out, err := collect(rows, store.ScanEntryRef)
	if err != nil {
		return nil, classify("entries without event", err)
	}
	return out, nil
}
