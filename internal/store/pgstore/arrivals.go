package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formd/formd/internal/store"
)

// arrivalsPrune bounds the old reports one call deletes.
const arrivalsPrune = 500

// RecordArrivals merges devices' reports into arrivals (see store.Store).
func (s *Store) RecordArrivals(ctx context.Context, form string, b store.ArrivalBatch, now time.Time) (int, error) {
	dropped := 0
	err := s.inTx(ctx, "record arrivals", func(tx pgx.Tx) error {
		dropped = 0
		for _, a := range b.Reports {
			tag, err := tx.Exec(ctx, `INSERT INTO arrivals(form, key, started_at, answered_at, state, reported_at)
				SELECT $1, $2, $3::timestamptz, $4::timestamptz, $5, $6 WHERE NOT $7 OR EXISTS (SELECT 1 FROM entries WHERE form = $1 AND key = $2)
				ON CONFLICT (form, key) DO UPDATE SET started_at = coalesce(arrivals.started_at, excluded.started_at),
					answered_at = coalesce(excluded.answered_at, arrivals.answered_at),
					state = CASE WHEN excluded.state <> '' THEN excluded.state ELSE arrivals.state END`,
				form, a.Key, timeOrNull(a.StartedAt), timeOrNull(a.AnsweredAt), a.State, micro(now), b.KnownOnly)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				dropped++
			}
		}
		if refused := b.Refused + dropped; refused > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO arrival_refusals(form, hour, n) VALUES ($1, $2, $3)
				ON CONFLICT (form, hour) DO UPDATE SET n = arrival_refusals.n + excluded.n`, form, now.Truncate(time.Hour), refused); err != nil {
				return err
			}
		}
		cutoff := now.Add(-store.ArrivalsKept)
		if _, err := tx.Exec(ctx, `DELETE FROM arrivals WHERE (form, key) IN
			(SELECT form, key FROM arrivals WHERE form = $1 AND reported_at < $2 LIMIT $3)`, form, cutoff, arrivalsPrune); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM arrival_refusals WHERE form = $1 AND hour < $2`, form, cutoff)
		return err
	})
	if err != nil {
		return 0, err
	}
	return dropped, nil
}

// ArrivalsRefused counts a form's refused arrival reports.
func (s *Store) ArrivalsRefused(ctx context.Context, form string, since, until time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(n), 0)::bigint FROM arrival_refusals WHERE form = $1 AND hour >= $2 AND hour < $3`,
		form, since.Truncate(time.Hour), until).Scan(&n)
	if err != nil {
		return 0, classify("arrivals refused", err)
	}
	return n, nil
}
