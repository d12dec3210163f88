package sqlitejournal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
)

// The journal file's schema: its migrations, the version a binary
// knows, and the rehash of entries journaled by earlier releases.

// schema is a new file's. The tables' names are the journal's own, so
// that on the shared writer of the embedded fast path (the store's file
// attached to the journal's connection) none hides a store table.
const schema = `
CREATE TABLE journal_entries (
	seq         INTEGER PRIMARY KEY,
	form        TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	site        TEXT    NOT NULL,
	id          TEXT    NOT NULL,
	received_at INTEGER NOT NULL,
	fingerprint BLOB    NOT NULL,
	spam        INTEGER NOT NULL,
	claims      TEXT    NOT NULL,
	data        BLOB    NOT NULL,
	digest      BLOB,
	checks      BLOB
);
CREATE UNIQUE INDEX journal_entries_form_key ON journal_entries(form, key);
CREATE TABLE journal_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO journal_meta(k, v) VALUES ('acked_upto', 0);
CREATE TABLE journal_probe (b BLOB);
` + writtenByTable

// migrations bring an older file up to the current schema; the file's
// user_version counts those applied. A new file gets the schema and the
// last version at once.
var migrations = []string{
	`ALTER TABLE entries ADD COLUMN digest BLOB`,
	`CREATE TABLE probe (b BLOB)`,
	`ALTER TABLE entries RENAME TO journal_entries;
	 ALTER TABLE meta RENAME TO journal_meta;
	 ALTER TABLE probe RENAME TO journal_probe`,
	// The index had the name of one of the store's, and the file records
	// the release that last wrote it. Entries journaled before digests
	// are marked for FillDigests.
	`DROP INDEX main.entries_form_key;
	 CREATE UNIQUE INDEX main.journal_entries_form_key ON journal_entries(form, key);
	 INSERT INTO main.journal_meta(k, v) SELECT 'digests_missing', 1 WHERE EXISTS (SELECT 1 FROM main.journal_entries WHERE digest IS NULL);
	 ` + writtenByTable,
	// What the decision checks in the store (journal.Checks): the
	// proof-of-work solution to spend, the uploads with their fields, the
	// spam reason. NULL for entries of earlier releases, which checked
	// them at intake.
	`ALTER TABLE main.journal_entries ADD COLUMN checks BLOB`,
}

// writtenByTable records the release that last opened the file for
// writing (one row), so that an older binary that refuses the file can
// say which release to run.
const writtenByTable = `CREATE TABLE main.journal_written_by (
	one     INTEGER PRIMARY KEY CHECK (one = 1),
	release TEXT    NOT NULL,
	schema  INTEGER NOT NULL,
	at      INTEGER NOT NULL
);`

// Known is the newest schema version of the journal's file this binary
// knows.
var Known = len(migrations)

// migrate creates a new file's schema, or applies the migrations an
// older file has not had, each in its own transaction with the version
// that records it (PRAGMA user_version is part of the transaction), and
// records this release as the file's last writer. A file of a newer
// schema is refused before anything is written to it.
func migrate(ctx context.Context, db *sql.DB, path string, now time.Time) error {
	s, tables, err := readSchema(ctx, db, path)
	if err != nil {
		return err
	}
	if err := release.Check(s); err != nil {
		return err
	}
	v := s.Version
	if v == 0 && tables == 0 {
		if err := inTx(ctx, db, "create schema", schema+fmt.Sprintf(`; PRAGMA main.user_version = %d`, len(migrations))); err != nil {
			return err
		}
		v = len(migrations)
	}
	for ; v < len(migrations); v++ {
		if err := inTx(ctx, db, fmt.Sprintf("migrate to %d", v+1), migrations[v]+fmt.Sprintf(`; PRAGMA main.user_version = %d`, v+1)); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO main.journal_written_by(one, release, schema, at) VALUES (1, ?, ?, ?)
		ON CONFLICT(one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
		release.Name(), len(migrations), now.UnixMicro()); err != nil {
		return fmt.Errorf("record the release: %w", err)
	}
	return nil
}

// readSchema reads the file's schema version, the release that last
// wrote it and how many tables it has, writing nothing.
func readSchema(ctx context.Context, db *sql.DB, path string) (release.Schema, int, error) {
	s := release.Schema{What: "journal", Where: path, Known: len(migrations)}
	var tables, recorded int
	if err := db.QueryRowContext(ctx, `PRAGMA main.user_version`).Scan(&s.Version); err != nil {
		return s, 0, fmt.Errorf("read schema version: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil {
		return s, 0, fmt.Errorf("read schema: %w", err)
	}
	s.Empty = tables == 0
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = 'journal_written_by'`).Scan(&recorded); err != nil {
		return s, 0, fmt.Errorf("read schema: %w", err)
	}
	if recorded > 0 {
		if err := db.QueryRowContext(ctx, `SELECT release FROM main.journal_written_by`).Scan(&s.WrittenBy); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s, 0, fmt.Errorf("read the release that wrote it: %w", err)
		}
	}
	return s, tables, nil
}

// ReadSchema says what the journal file at path has: its schema version,
// the newest this binary knows, and the release that last wrote it. It
// writes nothing (and creates no file: a missing file is version 0).
func ReadSchema(ctx context.Context, path string) (release.Schema, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return release.Schema{What: "journal", Where: path, Known: len(migrations), Empty: true}, nil
	}
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return release.Schema{}, fmt.Errorf("read journal schema: %w", err)
	}
	defer db.Close()
	s, _, err := readSchema(ctx, db, path)
	if err != nil {
		return s, fmt.Errorf("read journal schema %s: %w", path, err)
	}
	return s, nil
}

// inTx runs statements in one transaction.
func inTx(ctx context.Context, db *sql.DB, op, statements string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, statements); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// RehashLegacy records today's digest and claims for each entry journaled
// without a digest (journal.LegacyRehasher), once: only while the file
// has the mark its migration to version 4 set, in one transaction that
// clears it.
func (j *Journal) RehashLegacy(ctx context.Context, rehash func(journal.Entry) ([32]byte, []string, bool)) (int, error) {
	tx, err := j.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var marked int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM main.journal_meta WHERE k = 'digests_missing'`).Scan(&marked); err != nil || marked == 0 {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM main.journal_entries WHERE digest IS NULL ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	var es []journal.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("rehash legacy entries: %w", err)
		}
		es = append(es, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	n := 0
	for _, e := range es {
		d, claims, ok := rehash(e)
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE main.journal_entries SET digest = ?, claims = ? WHERE seq = ?`, d[:], strings.Join(claims, ","), e.Seq); err != nil {
			return 0, fmt.Errorf("rehash legacy entries: %w", err)
		}
		n++
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM main.journal_meta WHERE k = 'digests_missing'`); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	return n, nil
}
