package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ store.UploadHolds = (*Store)(nil)

// HoldUpload extends an upload's expiry. It and ExpireUpload lock the
// upload's row: the later one sees what the first did (a deleted row is
// not held; a held row is not expired).
func (s *Store) HoldUpload(ctx context.Context, id string, until time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE uploads SET expires_at = greatest(expires_at, $2) WHERE id = $1`, id, micro(until))
	if err != nil {
		return false, classify("hold upload", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ExpireUpload removes an unclaimed upload's record once it expired. A
// claim decided at the same moment fails it on the foreign key (see
// DeleteUpload), and the upload stays.
func (s *Store) ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM uploads u WHERE u.id = $1 AND u.expires_at <= $2
		AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id)`, id, micro(now))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: claimed meanwhile
		return false, nil
	}
	if err != nil {
		return false, classify("expire upload", err)
	}
	return tag.RowsAffected() == 1, nil
}

// UploadStates lists uploads in id order for the audit.
func (s *Store) UploadStates(ctx context.Context, after string, limit int) ([]store.UploadState, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.UploadStateColumns+`
		FROM uploads u LEFT JOIN upload_claims c ON c.upload_id = u.id LEFT JOIN entries e ON e.id = c.entry_id
		WHERE u.id COLLATE "C" > $1 ORDER BY u.id COLLATE "C" LIMIT $2`, after, limit)
	if err != nil {
		return nil, classify("list uploads", err)
	}
	out, err := collect(rows, store.ScanUploadState)
	if err != nil {
		return nil, classify("list uploads", err)
	}
	return out, nil
}
