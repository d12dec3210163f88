// Package migrate applies a store driver's schema migrations: the files
// NNNN_name.sql of a directory (embedded in the driver), each applied once,
// in the order of its number, in a transaction of its own together with
// the record of its version in the table schema_migrations, so that a
// migration that fails leaves nothing of itself behind and is tried again
// at the next start. The driver hands over its database as a DB and the
// few statements that differ between databases as a Dialect; this package
// knows no driver.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/release"
)

// Migration is one file of a migrations directory.
type Migration struct {
	Version int
	Name    string // the file's name, such as 0003_outbox.sql
	SQL     string
}

// Exec runs one statement in the transaction at hand and says how many rows
// it changed.
type Exec func(ctx context.Context, query string, args ...any) (int64, error)

// DB is the database a driver migrates.
type DB interface {
	// InTx runs fn in one transaction: committed when fn returns nil,
	// rolled back when it returns an error.
	InTx(ctx context.Context, fn func(Exec) error) error
	// QueryRow runs a query outside any transaction of the runner, for
	// the reads that come before any write (Read).
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Row is one row of a query (*sql.Row, pgx.Row).
type Row interface{ Scan(dst ...any) error }

// SQL is a database/sql database as a DB.
func SQL(db *sql.DB) DB { return sqlDB{db} }

type sqlDB struct{ db *sql.DB }

func (d sqlDB) QueryRow(ctx context.Context, q string, args ...any) Row {
	return d.db.QueryRowContext(ctx, q, args...)
}

func (d sqlDB) InTx(ctx context.Context, fn func(Exec) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(func(ctx context.Context, q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}); err != nil {
		return err
	}
	return tx.Commit()
}

// Dialect is how one database writes the runner's own statements.
type Dialect struct {
	// Lock, when set, runs first in every transaction of the runner and
	// holds until its end, so that instances starting together on one
	// database migrate one at a time (a PostgreSQL advisory lock). A
	// database with a single writer needs none.
	Lock string
	// CreateTable makes the table schema_migrations if it is missing.
	CreateTable string
	// Record adds a version (its one argument) to schema_migrations unless
	// it is there, changing one row when it added it.
	Record string
	// HasTable counts the tables named by its one argument (0 or 1) in
	// the database's schema at hand.
	HasTable string
	// WrittenBy records the release that opened the database (its
	// arguments: the release's name, the schema version) in the table
	// written_by, one row; "" for a database without it.
	WrittenBy string
	// Functions, when set, runs at the end of every Apply, after the
	// migrations, under Lock and in the transaction that records the
	// release: the current definitions of the database's functions
	// (CREATE OR REPLACE), kept in one file rather than in migrations.
	Functions string
	// FunctionsVersion is the version of Functions: a number the file
	// carries, raised with every change of a body, so that a database can
	// tell an older binary's functions from a newer one's.
	FunctionsVersion int
	// ClaimFunctions, when set, records FunctionsVersion and the release
	// (its arguments) as the writer of the database's functions unless a
	// newer version is recorded, changing one row when it did. Functions
	// runs only then: an older binary (in a rolling restart, or rolled
	// back) never puts its older bodies back over a newer one's, and uses
	// the newer ones (a change of a function's arguments or result needs a
	// migration, which an older binary refuses as a newer schema).
	ClaimFunctions string
}

// ErrBadName marks a migrations directory the runner refuses: a file that
// is not NNNN_name.sql, or two files with one number (the version is
// recorded once, so the second would never run).
var ErrBadName = errors.New("bad migration file name")

// Read lists the migrations in dir of fsys, by version.
func Read(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("read migrations: %w: %s; name each file NNNN_what.sql with a number of its own, such as 0013_promote.sql", ErrBadName, base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		out = append(out, Migration{Version: v, Name: base, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("read migrations: %w: %s and %s share version %d, and only the first would ever run; give the later one the next free number",
				ErrBadName, out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Apply applies the migrations in dir of fsys that schema_migrations does
// not record, in version order, each in its own transaction with its
// record, then defines the functions (Dialect.Functions) and records the
// release (Dialect.WrittenBy, named by release) in one more.
// It stops at the first that fails, naming it; those before it stay
// applied. A database that records a migration this binary does not have
// (written by a newer release) is refused with a *release.TooNewError
// before anything is written.
func Apply(ctx context.Context, db DB, d Dialect, fsys fs.FS, dir string, s release.Schema) error {
	ms, err := Read(fsys, dir)
	if err != nil {
		return err
	}
	s, err = status(ctx, db, d, ms, s)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := release.Check(s); err != nil {
		return err
	}
	if err := db.InTx(ctx, func(exec Exec) error {
		if err := lock(ctx, exec, d); err != nil {
			return err
		}
		if _, err := exec(ctx, d.CreateTable); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		if err := db.InTx(ctx, func(exec Exec) error { return apply(ctx, exec, d, m) }); err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
	}
	if d.WrittenBy == "" && d.Functions == "" {
		return nil
	}
	if err := db.InTx(ctx, func(exec Exec) error {
		if err := lock(ctx, exec, d); err != nil {
			return err
		}
		if d.Functions != "" {
			define := true
			if d.ClaimFunctions != "" {
				n, err := exec(ctx, d.ClaimFunctions, d.FunctionsVersion, release.Name())
				if err != nil {
					return fmt.Errorf("record the functions' version: %w", err)
				}
				define = n == 1
			}
			if define {
				if _, err := exec(ctx, d.Functions); err != nil {
					return fmt.Errorf("define the functions: %w", err)
				}
			}
		}
		if d.WrittenBy == "" {
			return nil
		}
		if _, err := exec(ctx, d.WrittenBy, release.Name(), s.Known); err != nil {
			return fmt.Errorf("record the release: %w", err)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Status says what the database has (s names it: What, Where): its
// newest recorded version, the versions it records that dir of fsys does
// not have, the newest dir has, and the release that last wrote it. It
// writes nothing.
func Status(ctx context.Context, db DB, d Dialect, fsys fs.FS, dir string, s release.Schema) (release.Schema, error) {
	ms, err := Read(fsys, dir)
	if err != nil {
		return s, err
	}
	return status(ctx, db, d, ms, s)
}

func status(ctx context.Context, db DB, d Dialect, ms []Migration, s release.Schema) (release.Schema, error) {
	s.Version, s.Unknown, s.WrittenBy, s.Empty = 0, nil, "", false
	if len(ms) > 0 {
		s.Known = ms[len(ms)-1].Version
	}
	has := func(table string) (bool, error) {
		var n int
		if err := db.QueryRow(ctx, d.HasTable, table).Scan(&n); err != nil {
			return false, fmt.Errorf("look for table %s: %w", table, err)
		}
		return n > 0, nil
	}
	ok, err := has("schema_migrations")
	if err != nil || !ok {
		s.Empty = err == nil
		return s, err
	}
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	var list string
	if err := db.QueryRow(ctx, `SELECT coalesce(max(version), 0), coalesce(string_agg(CAST(version AS TEXT), ','), '') FROM schema_migrations`).Scan(&s.Version, &list); err != nil {
		return s, fmt.Errorf("read schema_migrations: %w", err)
	}
	for _, f := range strings.Split(list, ",") {
		if v, err := strconv.Atoi(f); err == nil && !known[v] {
			s.Unknown = append(s.Unknown, v)
		}
	}
	slices.Sort(s.Unknown)
	if d.WrittenBy == "" {
		return s, nil
	}
	if ok, err := has("written_by"); err != nil || !ok {
		return s, err
	}
	var by *string
	if err := db.QueryRow(ctx, `SELECT max(release) FROM written_by`).Scan(&by); err != nil {
		return s, fmt.Errorf("read written_by: %w", err)
	}
	if by != nil {
		s.WrittenBy = *by
	}
	return s, nil
}

// apply records m's version and, when it was not recorded before, runs m,
// in the caller's transaction.
func apply(ctx context.Context, exec Exec, d Dialect, m Migration) error {
	if err := lock(ctx, exec, d); err != nil {
		return err
	}
	n, err := exec(ctx, d.Record, m.Version)
	if err != nil {
		return fmt.Errorf("record version %d: %w", m.Version, err)
	}
	if n == 0 {
		return nil // applied before
	}
	if _, err := exec(ctx, m.SQL); err != nil {
		return err
	}
	return nil
}

func lock(ctx context.Context, exec Exec, d Dialect) error {
	if d.Lock == "" {
		return nil
	}
	if _, err := exec(ctx, d.Lock); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}
