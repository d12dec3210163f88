package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/formd/formd/internal/store"
)

// heldQuery is what the unclaimed, unexpired uploads matching one column
// hold (store.UploadsHeld); the column is source or form.
func heldQuery(col string) string {
	return `SELECT coalesce(sum(u.size), 0), count(*) FILTER (WHERE u.completed_at IS NULL) FROM uploads u
		WHERE u.` + col + ` = ? AND u.expires_at > ?
		AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id)`
}

// CreateUploadWithin records a new upload unless its source or form
// would go over a limit: the count and the insert are one write
// transaction, and SQLite has one writer, so two instances' uploads at
// once (on one file) cannot both take the last of a budget.
func (s *Store) CreateUploadWithin(ctx context.Context, u store.Upload, l store.UploadLimits, now time.Time) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("create upload: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	held := func(col, v string) (store.UploadsHeld, error) {
		var h store.UploadsHeld
		if v == "" {
			return h, nil
		}
		err := tx.QueryRowContext(ctx, heldQuery(col), v, now.UnixMicro()).Scan(&h.Bytes, &h.InFlight)
		return h, err
	}
	src, err := held("source", u.Source)
	if err != nil {
		return classify("create upload: count the source's uploads", err)
	}
	frm, err := held("form", u.Form)
	if err != nil {
		return classify("create upload: count the form's uploads", err)
	}
	if err := store.CheckUploadLimits(l, u.Size, src, frm); err != nil {
		return err
	}
	if err := insertUpload(ctx, tx, u); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return classify("create upload: commit", err)
	}
	return nil
}

func insertUpload(ctx context.Context, tx *sql.Tx, u store.Upload) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO uploads(id, form, field, size, name, created_at, expires_at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Form, u.Field, u.Size, u.Name, u.CreatedAt.UnixMicro(), u.ExpiresAt.UnixMicro(), u.Source)
	if err != nil {
		return classify("create upload", err)
	}
	return nil
}
