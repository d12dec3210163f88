package pgstore

import (
	"context"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// CreateUploadWithin records a new upload unless its source or form
// would go over a limit. The form's, then the source's, transaction-scoped
// advisory lock serialise the count and the insert of every instance's
// uploads of one form or address (always in that order, so two never
// wait on each other), so that two uploads at once cannot both take the
// last of a budget.
func (s *Store) CreateUploadWithin(ctx context.Context, u store.Upload, l store.UploadLimits, now time.Time) error {
	var refused error
	err := s.inTx(ctx, "create upload", func(tx pgx.Tx) error {
		refused = nil
		held := func(col, v string) (store.UploadsHeld, error) {
			var h store.UploadsHeld
			if v == "" {
				return h, nil
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 30))`, "formd upload budget "+col+" "+v); err != nil {
				return h, err
			}
			err := tx.QueryRow(ctx, `SELECT coalesce(sum(u.size), 0)::bigint, count(*) FILTER (WHERE u.completed_at IS NULL) FROM uploads u
				WHERE u.`+col+` = $1 AND u.expires_at > $2
				AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id)`, v, micro(now)).Scan(&h.Bytes, &h.InFlight)
			return h, err
		}
		frm, err := held("form", u.Form)
		if err != nil {
			return err
		}
		src, err := held("source", u.Source)
		if err != nil {
			return err
		}
		if refused = store.CheckUploadLimits(l, u.Size, src, frm); refused != nil {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO uploads(id, form, field, size, name, created_at, expires_at, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			u.ID, u.Form, u.Field, u.Size, u.Name, micro(u.CreatedAt), micro(u.ExpiresAt), u.Source)
		return err
	})
	if refused != nil {
		return refused
	}
	return err
}
