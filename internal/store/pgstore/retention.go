package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Erase removes the data and claims of old entries of a form, oldest
// first (by id among equals). Rows another instance is erasing are
// skipped, not waited for.
func (s *Store) Erase(ctx context.Context, form string, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	return s.erase(ctx, "erase old data", `SELECT id FROM entries WHERE form = $1 AND received_at < $2 AND data IS NOT NULL
		ORDER BY received_at, id LIMIT $3 FOR UPDATE SKIP LOCKED`, form, before, limit)
}

// EraseEntries erases the entries with these ids.
func (s *Store) EraseEntries(ctx context.Context, ids []string) (int, error) {
	return s.erase(ctx, "erase entries", `SELECT id FROM entries WHERE id = ANY($1) AND data IS NOT NULL FOR UPDATE`, ids)
}

// erase erases the entries the query selects, in one statement.
func (s *Store) erase(ctx context.Context, op, selectIDs string, args ...any) (int, error) {
	var n int
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH target AS (`+selectIDs+`),
			released AS (DELETE FROM claims WHERE entry_id IN (SELECT id FROM target)),
			erased AS (UPDATE entries SET data = NULL, claims = '{}' WHERE id IN (SELECT id FROM target) RETURNING 1),
			versions AS (DELETE FROM entry_versions WHERE entry_id IN (SELECT id FROM target)),
			requests AS (UPDATE erasure_requests SET done_at = now() WHERE done_at IS NULL AND entry_id IN (SELECT id FROM target))
			SELECT count(*) FROM erased`, args...).Scan(&n)
	})
	return n, err
}
