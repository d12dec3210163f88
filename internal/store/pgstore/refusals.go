package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formd/formd/internal/store"
)

// AddRefusals adds intake's refusal counts (see store.Refusals).
func (s *Store) AddRefusals(ctx context.Context, counts []store.RefusalCount) error {
	return s.inTx(ctx, "add refusals", func(tx pgx.Tx) error {
		for _, c := range counts {
			if _, err := tx.Exec(ctx, `INSERT INTO intake_refusals(form, hour, reason, n) VALUES ($1, $2, $3, $4)
				ON CONFLICT (form, hour, reason) DO UPDATE SET n = intake_refusals.n + excluded.n`,
				c.Form, c.Hour.Truncate(time.Hour), c.Reason, c.N); err != nil {
				return err
			}
		}
		return nil
	})
}

// RefusalsOf is a form's refusal counts by reason.
func (s *Store) RefusalsOf(ctx context.Context, form string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT reason, sum(n)::bigint FROM intake_refusals WHERE form = $1 GROUP BY reason`, form)
	if err != nil {
		return nil, classify("refusals", err)
	}
	out := map[string]int64{}
	var r string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&r, &n}, func() error { out[r] = n; return nil })
	if err != nil {
		return nil, classify("refusals", err)
	}
	return out, nil
}
