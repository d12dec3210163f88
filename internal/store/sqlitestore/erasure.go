package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

var (
	_ store.ErasureRequests = (*Store)(nil)
	_ store.DraftStats      = (*Store)(nil)
)

// RequestErasure records a participant's request, once per entry.
func (s *Store) RequestErasure(ctx context.Context, form, id string, at time.Time) (store.ErasureRequest, bool, error) {
	res, err := s.wdb.ExecContext(ctx, `INSERT INTO erasure_requests(entry_id, form, requested_at)
		SELECT id, form, ? FROM entries WHERE form = ? AND id = ? AND data IS NOT NULL
		ON CONFLICT(entry_id) DO NOTHING`, at.UnixMicro(), form, id)
	if err != nil {
		return store.ErasureRequest{}, false, classify("request erasure", err)
	}
	n, _ := res.RowsAffected()
	r, ok, err := s.ErasureRequest(ctx, form, id)
	if err == nil && !ok {
		err = fmt.Errorf("request erasure %s/%s: %w", form, id, store.ErrNotFound)
	}
	return r, n == 1, err
}

// ErasureRequest reads the request of an entry.
func (s *Store) ErasureRequest(ctx context.Context, form, id string) (store.ErasureRequest, bool, error) {
	r, err := store.ScanErasureRequest(s.rdb.QueryRowContext(ctx, `SELECT form, entry_id, requested_at, done_at FROM erasure_requests WHERE form = ? AND entry_id = ?`, form, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, classify("read erasure request", err)
	}
	return r, true, nil
}

// ErasureRequests lists pending requests, oldest first.
func (s *Store) ErasureRequests(ctx context.Context, form string, limit int) ([]store.ErasureRequest, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT form, entry_id, requested_at, done_at FROM erasure_requests
		WHERE done_at IS NULL AND (?1 = '' OR form = ?1) ORDER BY requested_at, entry_id LIMIT ?2`, form, limit)
	if err != nil {
		return nil, classify("list erasure requests", err)
	}
	out, err := collect(rows, store.ScanErasureRequest)
	if err != nil {
		return nil, classify("list erasure requests", err)
	}
	return out, nil
}

// DraftCounts counts each form's drafts.
func (s *Store) DraftCounts(ctx context.Context) ([]store.DraftCounts, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT form, count(*), min(saved_at) FROM drafts GROUP BY form ORDER BY form`)
	if err != nil {
		return nil, classify("count drafts", err)
	}
	out, err := collect(rows, func(r store.Scanner) (store.DraftCounts, error) {
		var (
			d  store.DraftCounts
			us int64
		)
		err := r.Scan(&d.Form, &d.Count, &us)
		d.Oldest = time.UnixMicro(us)
		return d, err
	})
	if err != nil {
		return nil, classify("count drafts", err)
	}
	return out, nil
}
