package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// entryFilter is the WHERE clause of a page of a form's entries (package
// store's EntryQuery) and its arguments, numbered from $1.
func entryFilter(q store.EntryQuery) (string, []any) {
	args := []any{q.Form}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"form = $1"}
	if len(q.Statuses) > 0 {
		where = append(where, "status = ANY("+arg(q.Statuses)+")")
	}
	if !q.Since.IsZero() {
		where = append(where, "received_at >= "+arg(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "received_at < "+arg(q.Until))
	}
	if q.Before != (store.Cursor{}) {
		where = append(where, "(seq, id) < ("+arg(int64(q.Before.Seq))+", "+arg(q.Before.ID)+")")
	}
	return strings.Join(where, " AND "), args
}

// CountByStatus counts a form's entries by status.
func (s *Store) CountByStatus(ctx context.Context, form string) (store.StatusCounts, error) {
	rows, err := s.pool.Query(ctx, `SELECT status, count(*) FROM entries WHERE form = $1 GROUP BY status`, form)
	if err != nil {
		return nil, classify("count entries", err)
	}
	out := store.StatusCounts{}
	var st string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[st] = n
		return nil
	})
	if err != nil {
		return nil, classify("count entries", err)
	}
	return out, nil
}

// EntriesPerMinute counts a form's entries by minute received.
func (s *Store) EntriesPerMinute(ctx context.Context, form string, since, until time.Time) ([]store.MinuteCount, error) {
	rows, err := s.pool.Query(ctx, `SELECT floor(extract(epoch FROM received_at) / 60)::bigint AS m, count(*) FROM entries
		WHERE form = $1 AND received_at >= $2 AND received_at < $3 GROUP BY m ORDER BY m`, form, since, until)
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
// first, and keeps those whose data holds a needle (see the sqlite
// driver).
func (s *Store) SearchEntries(ctx context.Context, q store.EntryQuery, needles [][]byte, maxScan int) ([]store.Row, store.Cursor, error) {
	if len(needles) == 0 {
		return nil, store.Cursor{}, errors.New("search entries: nothing to search for")
	}
	maxScan = min(max(maxScan, 1), store.MaxSearchScan)
	where, args := entryFilter(q)
	var bound store.Cursor
	var seq int64
	err := s.pool.QueryRow(ctx, `SELECT seq, id FROM entries WHERE `+where+` ORDER BY seq DESC, id DESC LIMIT 1 OFFSET `+
		strconv.Itoa(maxScan-1), args...).Scan(&seq, &bound.ID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, store.Cursor{}, classify("search entries", err)
	}
	bound.Seq = uint64(seq)
	if err == nil {
		args = append(args, seq, bound.ID)
		where += fmt.Sprintf(" AND (seq, id) >= ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, needles)
	page := store.PageSize(q.Limit)
	rows, err := s.pool.Query(ctx, `SELECT `+store.RowColumns+` FROM entries WHERE `+where+
		fmt.Sprintf(` AND data IS NOT NULL AND EXISTS (SELECT 1 FROM unnest($%d::bytea[]) n WHERE position(n IN data) > 0)`, len(args))+
		` ORDER BY seq DESC, id DESC LIMIT `+strconv.Itoa(page), args...)
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
	d, err := store.ScanDetail(s.pool.QueryRow(ctx, `SELECT `+store.DetailColumns+` FROM entries WHERE form = $1 AND id = $2`, form, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return d, fmt.Errorf("read entry %s/%s: %w", form, id, store.ErrNotFound)
	}
	if err != nil {
		return d, classify("read entry", err)
	}
	return d, nil
}

// ArrivalStats gives a form's arrival rate by hour.
func (s *Store) ArrivalStats(ctx context.Context, form string, since, until time.Time) ([]store.ArrivalHour, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT h, sum(started), sum(reached), sum(received), sum(stored) FROM (
			SELECT floor(extract(epoch FROM a.reported_at) / 3600)::bigint AS h, 1 AS started,
				(EXISTS (SELECT 1 FROM entries e WHERE e.form = a.form AND e.key = a.key))::int AS reached, 0 AS received, 0 AS stored
			FROM arrivals a WHERE a.form = $1 AND a.reported_at >= $2 AND a.reported_at < $3
			UNION ALL
			SELECT floor(extract(epoch FROM received_at) / 3600)::bigint, 0, 0, 1, (decision IN ('stored', 'waitlisted'))::int
			FROM entries WHERE form = $1 AND received_at >= $2 AND received_at < $3
		) t GROUP BY h ORDER BY h`, form, since, until)
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
	rows, err := s.pool.Query(ctx, `SELECT `+store.ArrivalColumns+` FROM arrivals a
		WHERE a.form = $1 AND a.reported_at >= $2 AND a.reported_at < $3
			AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.form = a.form AND e.key = a.key)
		ORDER BY a.reported_at, a.key LIMIT $4`, form, since, until, limit)
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
	rows, err := s.pool.Query(ctx, `SELECT e.id, e.site, e.form, e.key, e.seq FROM entries e
		WHERE ($1 = '' OR e.form = $1) AND e.status IN ('stored', 'waitlisted', 'spam', 'cancelled')
			AND NOT EXISTS (SELECT 1 FROM events v WHERE v.entry_id = e.id)
		ORDER BY e.seq LIMIT $2`, form, limit)
	if err != nil {
		return nil, classify("entries without event", err)
	}
	out, err := collect(rows, store.ScanEntryRef)
	if err != nil {
		return nil, classify("entries without event", err)
	}
	return out, nil
}
