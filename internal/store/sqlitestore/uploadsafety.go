package sqlitestore

import (
	"context"
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

// ExpireUpload removes an unclaimed upload's record once it expired.
func (s *Store) ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error) {
	res, err := s.wdb.ExecContext(ctx, `DELETE FROM uploads WHERE id = ?1 AND expires_at <= ?2
		AND NOT EXISTS (SELECT 1 FROM upload_claims WHERE upload_id = ?1)`, id, now.UnixMicro())
	if err != nil {
		return false, classify("expire upload", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
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
