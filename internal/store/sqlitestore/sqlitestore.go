// Package sqlitestore is the embedded store driver: its own SQLite file (so
// that a damaged store can be rebuilt from the journal), WAL mode with
// synchronous=FULL, one write connection that serializes decisions, and a
// pool of readers.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/mattn/go-sqlite3"
)

var _ store.Store = (*Store)(nil)

// schema is the store's migrations, applied by package migrate.
//
//go:embed migrations/*.sql
var schema embed.FS

// Options configure the store.
type Options struct {
	Path string
	// Readers is the size of the pool of read connections (the server
	// takes it from the setting sqlite-readers); 0 for one per CPU.
	Readers int
	// Writer, when set, is the write connection to use instead of one of
	// the store's own: the shared writer of the embedded fast path
	// (sqlitedb.OpenShared), on which this file is attached. The store
	// migrates its file on a connection of its own first. It closes
	// Writer with itself: close the journal that shares it first. See
	// ApplyIn.
	Writer *sql.DB
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Store is the SQLite store.
type Store struct {
	wdb *sql.DB
	rdb *sql.DB
	now func() time.Time
	// hot are the decision statements, prepared once on the write
	// connection and bound to each transaction.
	hot *stmts
	// prune paces the decisions' prune of spent solutions (decide.go).
	prune challengePrune
	// shared says wdb is the shared writer of the embedded fast path.
	shared bool
	// erasedSinceTruncate says a full chunk of retention was erased and
	// only checkpointed: the chunk after it truncates the WAL, even when it
	// finds nothing more.
	erasedSinceTruncate atomic.Bool
}

// Open opens the store file, creating it and applying migrations as needed.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("open store: no path")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Readers <= 0 {
		opts.Readers = runtime.GOMAXPROCS(0)
	}
	wdb, err := sqlitedb.OpenWriter(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := upgrade(ctx, wdb, opts.Path); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store %s: %w", opts.Path, err)
	}
	shared := opts.Writer != nil
	if shared {
		// Migrated: from now on every write goes through the shared one.
		if err := wdb.Close(); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		wdb = opts.Writer
	}
	rdb, err := sqlitedb.OpenReader(opts.Path, opts.Readers)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	hot, err := prepare(ctx, wdb)
	if err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open store: prepare: %w", err)
	}
	return &Store{wdb: wdb, rdb: rdb, now: opts.Now, hot: hot, shared: shared}, nil
}

// dialect is how the embedded store's migrations are recorded (package
// migrate); one write connection means no lock is needed.
var dialect = migrate.Dialect{
	CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
	Record: `INSERT INTO schema_migrations(version, applied_at)
		VALUES (?, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) ON CONFLICT DO NOTHING`,
	HasTable: `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?`,
	WrittenBy: `INSERT INTO written_by(one, release, schema, at) VALUES (1, ?, ?, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
		ON CONFLICT(one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
}

// classify marks failures of the database itself as store.ErrUnavailable.
func classify(op string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrNomem:
			return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Close closes the file.
func (s *Store) Close() error {
	s.hot.close()
	if err := errors.Join(s.wdb.Close(), s.rdb.Close()); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// micro is t as the store keeps times: Unix microseconds.
func micro(t time.Time) int64 { return t.UnixMicro() }

// timeOrNull is t in Unix microseconds, or NULL for the zero time.
func timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// holdsAny is the condition that a row's data holds one of the needles,
// in parentheses, with the needles as its arguments: SQLite takes no
// array to search them in one, as PostgreSQL's position over unnest does.
func holdsAny(needles [][]byte) (cond string, args []any) {
	conds := make([]string, len(needles))
	args = make([]any, len(needles))
	for i, n := range needles {
		conds[i] = "instr(data, ?) > 0"
		args[i] = n
	}
	return "(" + strings.Join(conds, " OR ") + ")", args
}

// collect reads every row with scan and closes rows, as pgx.CollectRows
// does for the PostgreSQL store; no rows is a nil slice.
func collect[T any](rows *sql.Rows, scan func(store.Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanString reads a row of one text column, for collect.
func scanString(r store.Scanner) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}
