package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

var _ store.Uploads = (*Store)(nil)

// claimUploadSQL claims upload ?1 for entry ?2 of form ?3 as its ?4th:
// a complete upload of the form and, when ?5, of field ?6, not expired
// at ?7 (when the entry was received).
const claimUploadSQL = `INSERT INTO upload_claims(upload_id, entry_id, form, n)
	SELECT u.id, ?2, ?3, ?4 FROM uploads u WHERE u.id = ?1 AND u.form = ?3 AND u.completed_at IS NOT NULL
		AND (NOT ?5 OR u.field = ?6 AND u.expires_at >= ?7)
	ON CONFLICT(upload_id) DO NOTHING`

// claimUploads claims, for a just-inserted entry, the uploads it names
// (see package store): "" when it took them all, or the status the entry
// is then decided with and its detail (store.UploadDetail). The claims
// are inserted in the decision's transaction, keyed by the upload's id;
// an id listed twice is claimed once. An upload must be a complete upload
// of the entry's form and, for entries that name their fields
// (journal.Entry.Uploads), of that field and not expired when the entry
// was received. On a refusal the claims it took are given back.
func claimUploads(ctx context.Context, tx *sql.Tx, st *stmts, sub *journal.Entry) (status, detail string, err error) {
	ups, err := store.UploadChecks(sub)
	if err != nil || len(ups) == 0 {
		return "", "", err
	}
	checked := len(sub.Uploads) > 0
	received := sub.ReceivedAt.UnixMicro()
	for n, up := range ups {
		if slices.ContainsFunc(ups[:n], func(o journal.Upload) bool { return o.ID == up.ID }) {
			continue
		}
		if err := recordPosted(ctx, tx, sub, up); err != nil {
			return "", "", err
		}
		res, err := st.claimUpload.ExecContext(ctx, up.ID, sub.ID, sub.Form, n+1, checked, up.Field, received)
		if err != nil {
			return "", "", fmt.Errorf("claim upload: %w", err)
		}
		if k, _ := res.RowsAffected(); k == 1 {
			continue
		}
		status, code := store.StatusUploadMissing, store.UploadNotFound
		var (
			form, field string
			complete    bool
			expires     int64
			holder      sql.NullString
		)
		err = tx.QueryRowContext(ctx, `SELECT u.form, u.field, u.completed_at IS NOT NULL, u.expires_at, c.entry_id
			FROM uploads u LEFT JOIN upload_claims c ON c.upload_id = u.id WHERE u.id = ?`, up.ID).
			Scan(&form, &field, &complete, &expires, &holder)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return "", "", fmt.Errorf("read the upload: %w", err)
		case form != sub.Form || checked && (field != up.Field || expires < received):
		case holder.Valid:
			status, code = store.StatusUploadUsed, store.UploadUsed
		case !complete:
			code = store.UploadIncomplete
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM upload_claims WHERE entry_id = ?`, sub.ID); err != nil {
			return "", "", fmt.Errorf("give back upload claims: %w", err)
		}
		return status, store.UploadDetail(code, up.Field), nil
	}
	return "", "", nil
}

// recordPosted records, in the decision's transaction, the upload of a
// file a plain HTML post carried (journal.Posted): complete from the
// entry's arrival, of the entry's form and field. An upload with that id
// recorded already (the same post's retry, the same entry decided again)
// is left as it is, and the claim that follows checks it.
func recordPosted(ctx context.Context, tx *sql.Tx, sub *journal.Entry, up journal.Upload) error {
	p := up.Posted
	if p == nil {
		return nil
	}
	sum, err := p.Sum()
	if err != nil {
		return err
	}
	at := sub.ReceivedAt.UnixMicro()
	if _, err := tx.ExecContext(ctx, `INSERT INTO uploads(id, form, field, size, name, type, sha256, created_at, expires_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
		up.ID, sub.Form, up.Field, p.Size, p.Name, p.Type, sum[:], at, p.Expires.UnixMicro(), at); err != nil {
		return fmt.Errorf("record posted upload: %w", err)
	}
	return nil
}

// CreateUpload records a new, incomplete upload.
func (s *Store) CreateUpload(ctx context.Context, u store.Upload) error {
	_, err := s.wdb.ExecContext(ctx, `INSERT INTO uploads(id, form, field, size, name, created_at, expires_at, source) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Form, u.Field, u.Size, u.Name, u.CreatedAt.UnixMicro(), u.ExpiresAt.UnixMicro(), u.Source)
	if err != nil {
		return classify("create upload", err)
	}
	return nil
}

// CompleteUpload records an upload's digest and type.
func (s *Store) CompleteUpload(ctx context.Context, id string, sum [32]byte, typ string) error {
	res, err := s.wdb.ExecContext(ctx, `UPDATE uploads SET sha256 = ?, type = ?, completed_at = ? WHERE id = ?`,
		sum[:], typ, s.now().UnixMicro(), id)
	if err != nil {
		return classify("complete upload", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("complete upload %s: %w", id, store.ErrUploadNotFound)
	}
	return nil
}

// Upload reads one upload.
func (s *Store) Upload(ctx context.Context, id string) (store.Upload, error) {
	u, err := store.ScanUpload(s.rdb.QueryRowContext(ctx, `SELECT `+store.UploadColumns+`
		FROM `+store.UploadJoins+` WHERE u.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.UploadColumns+`
		FROM `+store.UploadJoins+` WHERE c.entry_id = ? AND e.data IS NOT NULL ORDER BY c.n`, entryID)
	if err != nil {
		return nil, classify("read entry uploads", err)
	}
	out, err := collect(rows, store.ScanUpload)
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT u.id FROM uploads u WHERE u.expires_at <= ?
		AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id) ORDER BY u.expires_at, u.id LIMIT ?`, now.UnixMicro(), limit)
	if err != nil {
		return nil, classify("list expired uploads", err)
	}
	out, err := collect(rows, scanString)
	if err != nil {
		return nil, classify("list expired uploads", err)
	}
	return out, nil
}

// DeleteUpload removes an unclaimed upload's record. The one write
// connection orders it with every decision, so a claim is either
// committed before (the record stays) or comes after (and finds no
// upload).
func (s *Store) DeleteUpload(ctx context.Context, id string) (bool, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("delete upload: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, `DELETE FROM uploads WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM upload_claims WHERE upload_id = ?1)`, id)
	if err != nil {
		return false, classify("delete upload", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil
	}
	if err := queueDeletion(ctx, tx, id, s.now()); err != nil {
		return false, classify("delete upload", err)
	}
	if err := tx.Commit(); err != nil {
		return false, classify("delete upload: commit", err)
	}
	return true, nil
}

// ErasedUploads lists uploads claimed by entries whose data was erased.
func (s *Store) ErasedUploads(ctx context.Context, limit int) ([]string, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT c.upload_id FROM upload_claims c JOIN entries e ON e.id = c.entry_id
		WHERE e.data IS NULL ORDER BY c.upload_id LIMIT ?`, limit)
	if err != nil {
		return nil, classify("list erased uploads", err)
	}
	out, err := collect(rows, scanString)
	if err != nil {
		return nil, classify("list erased uploads", err)
	}
	return out, nil
}

// DropErasedUpload removes an erased entry's upload claim and record and
// queues the deletion of its bytes.
func (s *Store) DropErasedUpload(ctx context.Context, id string) (bool, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("drop erased upload: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, `DELETE FROM upload_claims WHERE upload_id = ?1
		AND entry_id IN (SELECT id FROM entries WHERE data IS NULL)`, id)
	if err != nil {
		return false, classify("drop erased upload", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM uploads WHERE id = ?`, id); err != nil {
		return false, classify("drop erased upload", err)
	}
	if err := queueDeletion(ctx, tx, id, s.now()); err != nil {
		return false, classify("drop erased upload", err)
	}
	if err := tx.Commit(); err != nil {
		return false, classify("drop erased upload: commit", err)
	}
	return true, nil
}
