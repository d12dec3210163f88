package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
)

// upgrade brings the file to this binary's schema: it refuses a newer one
// before writing anything, mends what earlier releases' numbering left
// out (restorePromise), applies the migrations it lacks (package migrate:
// one transaction each) and records this release as its last writer.
func upgrade(ctx context.Context, wdb *sql.DB, path string) error {
	s, err := migrate.Status(ctx, migrate.SQL(wdb), dialect, schema, "migrations", release.Schema{What: "store", Where: path})
	if err != nil {
		return err
	}
	if err := release.Check(s); err != nil {
		return err
	}
	if err := restorePromise(ctx, wdb); err != nil {
		return err
	}
	return migrate.Apply(ctx, migrate.SQL(wdb), dialect, schema, "migrations", s)
}

// restorePromise applies 0002_promise.sql to a file that recorded version
// 2 for 0002_retention.sql instead: until c44d8d9 both files had number
// 2, and a store made by a release before it (b3f9691, the first) had
// version 2 recorded by the retention index, so the runner skipped the
// promise (entries.same_as, tokens.used_at, settings) for good. It looks
// at the schema itself, so it runs once and only where the promise is
// missing, in one transaction, before the migrations after it.
func restorePromise(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var skipped int
	if err := tx.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'schema_migrations')
		AND EXISTS (SELECT 1 FROM pragma_table_info('entries'))
		AND NOT EXISTS (SELECT 1 FROM pragma_table_info('entries') WHERE name = 'same_as')`).Scan(&skipped); err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	if skipped == 0 {
		return nil
	}
	var two int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = 2`).Scan(&two); err != nil || two == 0 {
		return err
	}
	body, err := fs.ReadFile(schema, "migrations/0002_promise.sql")
	if err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	// The same releases hashed participant claims without a key: they are
	// made again from the entries' data once the secret is known
	// (RekeyClaims).
	if _, err := tx.ExecContext(ctx, string(body)+`; INSERT INTO settings(name, value) VALUES ('rekey_claims', x'01')`); err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("restore 0002_promise.sql: %w", err)
	}
	return nil
}

var _ store.ClaimRekeyer = (*Store)(nil)

// RekeyClaims gives the live entries of a store from before keyed claims
// the claims their data makes today (store.ClaimRekeyer): once, while the
// mark restorePromise set is there, in one transaction that clears it.
// An entry keeps its old claims too, and lists both, so that cancelling
// it frees every one.
func (s *Store) RekeyClaims(ctx context.Context, claim func(form string, data json.RawMessage) []string) (int, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify("rekey claims", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var marked int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM settings WHERE name = 'rekey_claims'`).Scan(&marked); err != nil {
		return 0, classify("rekey claims", err)
	}
	if marked == 0 {
		return 0, nil
	}
	type live struct {
		id, form, claims string
		data             []byte
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, form, claims, data FROM entries
		WHERE status IN ('stored', 'waitlisted') AND data IS NOT NULL ORDER BY seq, id`)
	if err != nil {
		return 0, classify("rekey claims", err)
	}
	var es []live
	for rows.Next() {
		var e live
		if err := rows.Scan(&e.id, &e.form, &e.claims, &e.data); err != nil {
			rows.Close()
			return 0, classify("rekey claims", err)
		}
		es = append(es, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, classify("rekey claims", err)
	}
	n := 0
	for _, e := range es {
		toks := claim(e.form, e.data)
		if len(toks) == 0 {
			continue
		}
		for _, tok := range toks {
			if _, err := tx.ExecContext(ctx, `INSERT INTO claims(form, claim, entry_id) VALUES (?1, `+claimKey("?2")+`, ?3) ON CONFLICT(form, claim) DO NOTHING`, e.form, tok, e.id); err != nil {
				return 0, classify("rekey claims", err)
			}
		}
		list := strings.Join(toks, ",")
		if e.claims != "" {
			list = e.claims + "," + list
		}
		if _, err := tx.ExecContext(ctx, `UPDATE entries SET claims = ? WHERE id = ?`, list, e.id); err != nil {
			return 0, classify("rekey claims", err)
		}
		n++
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE name = 'rekey_claims'`); err != nil {
		return 0, classify("rekey claims", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify("rekey claims", err)
	}
	return n, nil
}

// ReadSchema says what the store file at path has: its schema version
// (the newest migration it records), the newest this binary knows, the
// migrations it records that this binary lacks, and the release that last
// wrote it. It writes nothing and creates no file (a missing one is
// version 0). Open refuses a file for which Schema.TooNew is true.
func ReadSchema(ctx context.Context, path string) (release.Schema, error) {
	s := release.Schema{What: "store", Where: path}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		ms, err := migrate.Read(schema, "migrations")
		if err != nil {
			return s, err
		}
		s.Known, s.Empty = ms[len(ms)-1].Version, true
		return s, nil
	}
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return s, fmt.Errorf("read store schema: %w", err)
	}
	defer db.Close()
	s, err = migrate.Status(ctx, migrate.SQL(db), dialect, schema, "migrations", s)
	if err != nil {
		return s, fmt.Errorf("read store schema %s: %w", path, err)
	}
	return s, nil
}
