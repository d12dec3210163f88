package sqlitestore

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/formd/formd/internal/sqlitedb"
)

// Files is the store's file as a backup reads it (package backup's
// StoreFiles): copied live, then read from the copy, which nothing
// writes. It knows the tables of every release's store, so that a data
// directory an earlier release wrote is backed up as it is.
type Files struct{}

// Copy copies the live store file src to dst, consistent while a server
// writes it.
func (Files) Copy(ctx context.Context, src, dst string) error { return sqlitedb.Copy(ctx, src, dst) }

// SchemaVersion reads the newest migration the store file at path
// records (0 for none).
func (Files) SchemaVersion(ctx context.Context, path string) (int, error) {
	return sqlitedb.ReadVersion(ctx, path, `SELECT coalesce(max(version), 0) FROM schema_migrations`)
}

// EntryCounts counts the entries of the store file at path by status.
func (Files) EntryCounts(ctx context.Context, path string) (map[string]int, error) {
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT status, count(*) FROM entries GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count the store's entries: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("count the store's entries: %w", err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count the store's entries: %w", err)
	}
	return out, nil
}

// Uploads calls each with every complete upload of the store file at
// path that is claimed by an entry whose data is kept, or not claimed
// yet (a journaled submission may still claim it), in id order, with
// its content's SHA-256 (hex), size and whether it is claimed. A store
// of a release before uploads (no uploads table) has none.
func (Files) Uploads(ctx context.Context, path string, each func(id, sha256 string, size int64, claimed bool) error) error {
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		return err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('uploads', 'upload_claims')`).Scan(&tables); err != nil {
		return fmt.Errorf("list the store's uploads: %w", err)
	}
	if tables < 2 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT u.id, u.sha256, u.size, c.upload_id IS NOT NULL FROM uploads u
		LEFT JOIN upload_claims c ON c.upload_id = u.id LEFT JOIN entries e ON e.id = c.entry_id
		WHERE u.sha256 IS NOT NULL AND (c.upload_id IS NULL OR e.data IS NOT NULL) ORDER BY u.id`)
	if err != nil {
		return fmt.Errorf("list the store's uploads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var sum []byte
		var size int64
		var claimed bool
		if err := rows.Scan(&id, &sum, &size, &claimed); err != nil {
			return fmt.Errorf("list the store's uploads: %w", err)
		}
		if err := each(id, hex.EncodeToString(sum), size, claimed); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list the store's uploads: %w", err)
	}
	return nil
}

// DropUploads removes from the store file at path (a restore's staged
// copy, which no server has open) every complete upload no entry claims
// whose id kept does not hold, with its claims' absence checked in the
// same statement. A store of a release before uploads has none.
func (Files) DropUploads(ctx context.Context, path string, kept map[string]bool) error {
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		return err
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('uploads', 'upload_claims')`).Scan(&tables); err != nil {
		return fmt.Errorf("drop the uploads a backup left out: %w", err)
	}
	if tables < 2 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT u.id FROM uploads u LEFT JOIN upload_claims c ON c.upload_id = u.id
		WHERE u.sha256 IS NOT NULL AND c.upload_id IS NULL`)
	if err != nil {
		return fmt.Errorf("drop the uploads a backup left out: %w", err)
	}
	var drop []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("drop the uploads a backup left out: %w", err)
		}
		if !kept[id] {
			drop = append(drop, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("drop the uploads a backup left out: %w", err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("drop the uploads a backup left out: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	for _, id := range drop {
		if _, err := tx.ExecContext(ctx, `DELETE FROM uploads WHERE id = ? AND NOT EXISTS (SELECT 1 FROM upload_claims WHERE upload_id = ?)`, id, id); err != nil {
			return fmt.Errorf("drop the upload %s a backup left out: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("drop the uploads a backup left out: %w", err)
	}
	return nil
}
