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

// ExpireUpload removes an unclaimed upload's record once it expired and,
// in the same statement, queues the deletion of its bytes. A claim
// decided at the same moment fails it on the foreign key (see
// DeleteUpload), and the upload stays.
func (s *Store) ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM uploads u WHERE u.id = $1 AND u.expires_at <= $2
			AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id) RETURNING u.id)
		INSERT INTO upload_deletions(upload_id, queued_at) SELECT id, $2 FROM gone
		ON CONFLICT (upload_id) DO UPDATE SET queued_at = excluded.queued_at`, id, micro(now))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: claimed meanwhile
		return false, nil
	}
	if err != nil {
		return false, classify("expire upload", err)
	}
	return tag.RowsAffected() == 1, nil
}

var _ store.UploadDeletions = (*Store)(nil)

// PendingDeletions lists queued deletions, fewest attempts first.
func (s *Store) PendingDeletions(ctx context.Context, limit int) ([]store.UploadDeletion, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+store.UploadDeletionColumns+` FROM upload_deletions
		ORDER BY attempts, queued_at, upload_id COLLATE "C" LIMIT $1`, limit)
	if err != nil {
		return nil, classify("list upload deletions", err)
	}
	out, err := collect(rows, store.ScanUploadDeletion)
	if err != nil {
		return nil, classify("list upload deletions", err)
	}
	return out, nil
}

// DeletionDone takes a deletion off the queue.
func (s *Store) DeletionDone(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM upload_deletions WHERE upload_id = $1`, id); err != nil {
		return classify("finish upload deletion", err)
	}
	return nil
}

// DeletionFailed records a failed attempt.
func (s *Store) DeletionFailed(ctx context.Context, id, reason string, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE upload_deletions SET attempts = attempts + 1, last_error = $2, tried_at = $3 WHERE upload_id = $1`,
		id, reason, micro(at)); err != nil {
		return classify("record a failed upload deletion", err)
	}
	return nil
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
