package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ store.Uploads = (*Store)(nil)

// The decision claims an entry's uploads in formd_decide
// (functions.sql: formd_claim_uploads).

// CreateUpload records a new, incomplete upload.
func (s *Store) CreateUpload(ctx context.Context, u store.Upload) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO uploads(id, form, field, size, name, created_at, expires_at, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		u.ID, u.Form, u.Field, u.Size, u.Name, micro(u.CreatedAt), micro(u.ExpiresAt), u.Source)
	if err != nil {
		return classify("create upload", err)
	}
	return nil
}

// CompleteUpload records an upload's digest and type.
func (s *Store) CompleteUpload(ctx context.Context, id string, sum [32]byte, typ string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE uploads SET sha256 = $1, type = $2, completed_at = $3 WHERE id = $4`,
		sum[:], typ, micro(s.now()), id)
	if err != nil {
		return classify("complete upload", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("complete upload %s: %w", id, store.ErrUploadNotFound)
	}
	return nil
}

// Upload reads one upload.
func (s *Store) Upload(ctx context.Context, id string) (store.Upload, error) {
	u, err := store.ScanUpload(s.pool.QueryRow(ctx, `SELECT `+store.UploadColumns+`
		FROM `+store.UploadJoins+` WHERE u.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return u, fmt.Errorf("read upload %s: %w", id, store.ErrUploadNotFound)
	}
	if err != nil {
		return u, classify("read upload", err)
	}
	return u, nil
}

// EntryUploads lists an entry's uploads in the order its data names them,
// none once its data was erased.
func (s *Store) EntryUploads(ctx context.Context, entryID string) ([]store.Upload, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.UploadColumns+`
		FROM `+store.UploadJoins+` WHERE c.entry_id = $1 AND e.data IS NOT NULL ORDER BY c.n`, entryID)
	if err != nil {
		return nil, classify("read entry uploads", err)
	}
	out, err := pgx.AppendRows([]store.Upload(nil), rows, func(r pgx.CollectableRow) (store.Upload, error) { return store.ScanUpload(r) })
	if err != nil {
		return nil, classify("read entry uploads", err)
	}
	return out, nil
}

// ExpiredUploads lists unclaimed uploads expired at now.
func (s *Store) ExpiredUploads(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT u.id FROM uploads u WHERE u.expires_at <= $1
		AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id) ORDER BY u.expires_at, u.id LIMIT $2`, micro(now), limit)
	if err != nil {
		return nil, classify("list expired uploads", err)
	}
	out, err := pgx.AppendRows([]string(nil), rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("list expired uploads", err)
	}
	return out, nil
}

// DeleteUpload removes an unclaimed upload's record and, in the same
// statement, queues the deletion of its bytes. A claim being
// decided at the same moment holds a lock on the upload's row (its
// foreign key): the deletion waits for it and then fails on the key, and
// the upload stays.
func (s *Store) DeleteUpload(ctx context.Context, id string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM uploads u WHERE u.id = $1
			AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id) RETURNING u.id)
		INSERT INTO upload_deletions(upload_id, queued_at) SELECT id, $2 FROM gone
		ON CONFLICT (upload_id) DO UPDATE SET queued_at = excluded.queued_at`, id, micro(s.now()))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: claimed meanwhile
		return false, nil
	}
	if err != nil {
		return false, classify("delete upload", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ErasedUploads lists uploads claimed by entries whose data was erased.
func (s *Store) ErasedUploads(ctx context.Context, limit int) ([]string, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT c.upload_id FROM upload_claims c JOIN entries e ON e.id = c.entry_id
		WHERE e.data IS NULL ORDER BY c.upload_id LIMIT $1`, limit)
	if err != nil {
		return nil, classify("list erased uploads", err)
	}
	out, err := pgx.AppendRows([]string(nil), rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify("list erased uploads", err)
	}
	return out, nil
}

// DropErasedUpload removes an erased entry's upload claim and record and
// queues the deletion of its bytes.
func (s *Store) DropErasedUpload(ctx context.Context, id string) (bool, error) {
	dropped := false
	err := s.inTx(ctx, "drop erased upload", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM upload_claims WHERE upload_id = $1
			AND entry_id IN (SELECT id FROM entries WHERE data IS NULL)`, id)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM uploads WHERE id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO upload_deletions(upload_id, queued_at) VALUES ($1, $2)
			ON CONFLICT (upload_id) DO UPDATE SET queued_at = excluded.queued_at`, id, micro(s.now())); err != nil {
			return err
		}
		dropped = true
		return nil
	})
	return dropped, err
}
