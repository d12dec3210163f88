package sqlitestore

import (
	"context"
	"time"

	"github.com/formd/formd/internal/store"
)

// AddRefusals adds intake's refusal counts (see store.Refusals).
func (s *Store) AddRefusals(ctx context.Context, counts []store.RefusalCount) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("add refusals: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, c := range counts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO intake_refusals(form, hour, reason, n) VALUES (?, ?, ?, ?)
			ON CONFLICT(form, hour, reason) DO UPDATE SET n = n + excluded.n`,
			c.Form, c.Hour.Truncate(time.Hour).UnixMicro(), c.Reason, c.N); err != nil {
			return classify("add refusals", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return classify("add refusals: commit", err)
	}
	return nil
}

// RefusalsOf is a form's refusal counts by reason.
func (s *Store) RefusalsOf(ctx context.Context, form string) (map[string]int64, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT reason, sum(n) FROM intake_refusals WHERE form = ? GROUP BY reason`, form)
	if err != nil {
		return nil, classify("refusals", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var r string
		var n int64
		if err := rows.Scan(&r, &n); err != nil {
			return nil, classify("refusals", err)
		}
		out[r] = n
	}
	if err := rows.Err(); err != nil {
		return nil, classify("refusals", err)
	}
	return out, nil
}
