package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.UploadHolds = (*Store)(nil)

// HoldUpload extends an unclaimed upload's expiry. On the one write
// connection it is ordered with ExpireUpload: one of the two wins.
func (s *Store) HoldUpload(ctx context.Context, id string, until time.Time) (bool, error) {
	res, err := s.wdb.ExecContext(ctx, `UPDATE uploads SET expires_at = max(expires_at, ?2) WHERE id = ?1`, id, until.UnixMicro())
	if err != nil {
		return false, classify("hold upload", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ExpireUpload removes an unclaimed upload's record once it expired, and
// queues the deletion of its bytes in the same transaction.
func (s *Store) ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("expire upload: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, `DELETE FROM uploads WHERE id = ?1 AND expires_at <= ?2
		AND NOT EXISTS (SELECT 1 FROM upload_claims WHERE upload_id = ?1)`, id, now.UnixMicro())
	if err != nil {
		return false, classify("expire upload", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil
	}
	if err := queueDeletion(ctx, tx, id, now); err != nil {
		return false, classify("expire upload", err)
	}
	if err := tx.Commit(); err != nil {
		return false, classify("expire upload: commit", err)
	}
	return true, nil
}

// queueDeletion puts an upload whose record the transaction removes in
// upload_deletions.
func queueDeletion(ctx context.Context, tx *sql.Tx, id string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO upload_deletions(upload_id, queued_at) VALUES (?, ?)
		ON CONFLICT(upload_id) DO UPDATE SET queued_at = excluded.queued_at`, id, at.UnixMicro())
	if err != nil {
		return fmt.Errorf("queue the deletion of its bytes: %w", err)
	}
	return nil
}

var _ store.UploadDeletions = (*Store)(nil)

// PendingDeletions lists queued deletions, fewest attempts first.
func (s *Store) PendingDeletions(ctx context.Context, limit int) ([]store.UploadDeletion, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.UploadDeletionColumns+` FROM upload_deletions
		ORDER BY attempts, queued_at, upload_id LIMIT ?`, limit)
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
	if _, err := s.wdb.ExecContext(ctx, `DELETE FROM upload_deletions WHERE upload_id = ?`, id); err != nil {
		return classify("finish upload deletion", err)
	}
	return nil
}

// DeletionFailed records a failed attempt.
func (s *Store) DeletionFailed(ctx context.Context, id, reason string, at time.Time) error {
	if _, err := s.wdb.ExecContext(ctx, `UPDATE upload_deletions SET attempts = attempts + 1, last_error = ?, tried_at = ? WHERE upload_id = ?`,
		reason, at.UnixMicro(), id); err != nil {
		return classify("record a failed upload deletion", err)
	}
	return nil
}

// UploadStates lists uploads in id order for the audit.
func (s *Store) UploadStates(ctx context.Context, after string, limit int) ([]store.UploadState, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.UploadStateColumns+`
		FROM uploads u LEFT JOIN upload_claims c ON c.upload_id = u.id LEFT JOIN entries e ON e.id = c.entry_id
		WHERE u.id > ? ORDER BY u.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, classify("list uploads", err)
	}
	out, err := collect(rows, store.ScanUploadState)
	if err != nil {
		return nil, classify("list uploads", err)
	}
	return out, nil
}
