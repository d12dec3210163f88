package sqlitestore

import (
	"context"
	"time"

	"github.com/formd/formd/internal/store"
)

// arrivalsPrune bounds the old reports one call deletes.
const arrivalsPrune = 500

// RecordArrivals merges devices' reports into arrivals (see store.Store).
func (s *Store) RecordArrivals(ctx context.Context, form string, b store.ArrivalBatch, now time.Time) (int, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify("record arrivals: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	dropped := 0
	for _, a := range b.Reports {
		res, err := tx.ExecContext(ctx, `INSERT INTO arrivals(form, key, started_at, answered_at, state, reported_at)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE NOT ?7 OR EXISTS (SELECT 1 FROM entries WHERE form = ?1 AND key = ?2)
			ON CONFLICT(form, key) DO UPDATE SET started_at = coalesce(arrivals.started_at, excluded.started_at),
				answered_at = coalesce(excluded.answered_at, arrivals.answered_at),
				state = CASE WHEN excluded.state != '' THEN excluded.state ELSE arrivals.state END`,
			form, a.Key, timeOrNull(a.StartedAt), timeOrNull(a.AnsweredAt), a.State, now.UnixMicro(), b.KnownOnly)
		if err != nil {
			return 0, classify("record arrivals", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			dropped++
		}
	}
	if refused := b.Refused + dropped; refused > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO arrival_refusals(form, hour, n) VALUES (?, ?, ?)
			ON CONFLICT(form, hour) DO UPDATE SET n = n + excluded.n`, form, now.Truncate(time.Hour).UnixMicro(), refused); err != nil {
			return 0, classify("record arrivals: count refusals", err)
		}
	}
	cutoff := now.Add(-store.ArrivalsKept).UnixMicro()
	if _, err := tx.ExecContext(ctx, `DELETE FROM arrivals WHERE (form, key) IN
		(SELECT form, key FROM arrivals WHERE form = ?1 AND reported_at < ?2 LIMIT ?3)`, form, cutoff, arrivalsPrune); err != nil {
		return 0, classify("record arrivals: prune", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM arrival_refusals WHERE form = ? AND hour < ?`, form, cutoff); err != nil {
		return 0, classify("record arrivals: prune refusals", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify("record arrivals: commit", err)
	}
	return dropped, nil
}

// ArrivalsRefused counts a form's refused arrival reports.
func (s *Store) ArrivalsRefused(ctx context.Context, form string, since, until time.Time) (int64, error) {
	var n int64
	err := s.rdb.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM arrival_refusals WHERE form = ? AND hour >= ? AND hour < ?`,
		form, since.Truncate(time.Hour).UnixMicro(), until.UnixMicro()).Scan(&n)
	if err != nil {
		return 0, classify("arrivals refused", err)
	}
	return n, nil
}
