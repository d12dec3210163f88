// Package pgstore is the store driver for several formd instances: one
// PostgreSQL database that every instance decides into, through pgx v5.
//
// The rules are those of package store, enforced by the database as in the
// embedded store: unique indexes decide replays and duplicate participants,
// a guarded UPDATE on the form's capacity row decides places (its row lock
// serializes instances; READ COMMITTED re-checks the guard after the wait,
// so no place is sold twice). A decision is the SQL function formd_decide
// (functions.sql), so a batch of decisions is one pipelined round
// trip inside one transaction.
//
// Failures of the database itself (a lost connection, a server shutting
// down, a deadlock or serialization failure still there after a few quick
// retries) wrap store.ErrUnavailable, so the processor retries the batch
// and counts nothing against the entries.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ store.Store = (*Store)(nil)

// schema is the store's migrations, applied by package migrate.
//
//go:embed migrations/*.sql
var schema embed.FS

// functions is the current PL/pgSQL of the store (functions.sql), defined
// again at every start after the migrations (dialect.Functions).
//
//go:embed functions.sql
var functions string

// functionsVersionLine is the line of functions.sql that gives its version.
var functionsVersionLine = regexp.MustCompile(`(?m)^-- functions-version: ([0-9]+)$`)

// mustFunctionsVersion reads the version a functions file carries (its
// line "-- functions-version: N"), recorded in functions_version beside
// the release that defined the bodies (dialect.ClaimFunctions); a file
// without one is a build error of this package, caught by every test.
func mustFunctionsVersion(sql string) int {
	m := functionsVersionLine.FindStringSubmatch(sql)
	if m == nil {
		panic("pgstore: functions.sql has no line \"-- functions-version: N\"")
	}
	v, err := strconv.Atoi(m[1])
	if err != nil || v < 1 {
		panic("pgstore: functions.sql has a bad functions-version: " + m[1])
	}
	return v
}

// Options configure the store.
type Options struct {
	// URL is the database, postgres://user@host:port/db?sslmode=...; pgx
	// settings such as pool_max_conns and search_path may be given in it.
	URL string
	// MaxConns bounds the pool (the server takes it from the setting
	// postgres-max-conns); pool_max_conns in the URL takes precedence,
	// and 0 leaves it to pgx (the larger of 4 and the CPUs).
	MaxConns int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Store is the PostgreSQL store.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// functions is the version of the functions this binary defines.
	functions int

	locksOnce sync.Once
	locks     *UploadLocks // uploadlocks.go
}

// Open connects, applies the migrations not yet applied (one instance at a
// time) and returns the store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	return open(ctx, opts, functions)
}

// open is Open defining the functions of sql: functions.sql, or in tests
// another version of it, as another release's binary would.
func open(ctx context.Context, opts Options, sql string) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("open store: parse URL: %w", err)
	}
	if opts.MaxConns > 0 && !strings.Contains(opts.URL, "pool_max_conns") {
		cfg.MaxConns = int32(min(opts.MaxConns, math.MaxInt32))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := upgrade(ctx, pool, where(cfg), sql); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s@%s/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, classify("schema", err))
	}
	return &Store{pool: pool, now: opts.Now, functions: mustFunctionsVersion(sql)}, nil
}

// dialect is how the PostgreSQL store's migrations are recorded (package
// migrate): each transaction takes an advisory lock of the schema first,
// so that instances starting together migrate one at a time. Its
// functions are those of functions.sql (withFunctions).
var dialect = withFunctions(migrate.Dialect{
	Lock:        `SELECT pg_advisory_xact_lock(hashtext('formd-migrate:' || coalesce(current_schema(), '')))`,
	CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`,
	Record:      `INSERT INTO schema_migrations(version, applied_at) VALUES ($1, now()) ON CONFLICT DO NOTHING`,
	HasTable:    `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`,
	WrittenBy: `INSERT INTO written_by(one, release, schema, at) VALUES (1, $1, $2, now())
		ON CONFLICT (one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
	// Under the migration lock: the version recorded, and the release
	// that defined the bodies, change only for a version as new or newer
	// (the same version again defines the same bodies again, which mends a
	// body changed by hand).
	ClaimFunctions: `INSERT INTO functions_version(one, version, release, at) VALUES (1, $1, $2, now())
		ON CONFLICT (one) DO UPDATE SET version = excluded.version, release = excluded.release, at = excluded.at
		WHERE functions_version.version <= excluded.version`,
}, functions)

// withFunctions is d defining sql, of the version the file carries.
func withFunctions(d migrate.Dialect, sql string) migrate.Dialect {
	d.Functions, d.FunctionsVersion = sql, mustFunctionsVersion(sql)
	return d
}

// migrations runs package migrate's transactions on the pool.
type migrations struct{ pool *pgxpool.Pool }

func (m migrations) QueryRow(ctx context.Context, q string, args ...any) migrate.Row {
	return m.pool.QueryRow(ctx, q, args...)
}

func (m migrations) InTx(ctx context.Context, fn func(migrate.Exec) error) error {
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		return fn(func(ctx context.Context, q string, args ...any) (int64, error) {
			tag, err := tx.Exec(ctx, q, args...)
			return tag.RowsAffected(), err
		})
	})
}

// classify marks failures of the database rather than of the data as
// store.ErrUnavailable. PostgreSQL's verdicts on the data (constraint,
// type and value errors) are the entries' own; everything else — no
// connection, a server going down, too many clients, a deadlock — is not.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !transientCode(pe.Code) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
}

// transientCode says a PostgreSQL error code is about the server or the
// transaction's luck rather than the data.
func transientCode(code string) bool {
	switch code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialization failure, deadlock
		"53", // insufficient resources: disk full, too many connections
		"57", // operator intervention: shutdown, crash, cannot connect now
		"58", // system error: I/O
		"XX": // internal error
		return true
	}
	return code == "55P03" || code == "25006" // lock not available; read-only (a failover in progress)
}

// retryable says a transaction failed on a deadlock or serialization
// failure, which succeeds when simply run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// inTx runs fn in a transaction, again up to three times on a deadlock or
// serialization failure, and classifies the error that remains.
func (s *Store) inTx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	return retrying(ctx, op, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
}

// retrying runs attempt, again up to three times after a growing pause
// on a deadlock or serialization failure, and classifies the error that
// remains: the retries of inTx and inPipeline.
func retrying(ctx context.Context, op string, attempt func() error) error {
	var err error
	for n := range 4 {
		if n > 0 {
			t := time.NewTimer(time.Duration(n*n) * 5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return classify(op, ctx.Err())
			case <-t.C:
			}
		}
		err = attempt()
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return classify(op, err)
	}
	return nil
}

// Close closes the connections.
func (s *Store) Close() error {
	if s.locks != nil {
		s.locks.close()
	}
	s.pool.Close()
	return nil
}

func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// timeOrNull is t, or NULL for the zero time.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = micro(t)
	return &t
}

// collect reads every row with scan (one of package store's scanners), as
// the sqlite driver's collect does.
func collect[T any](rows pgx.Rows, scan func(store.Scanner) (T, error)) ([]T, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
}

// FunctionsSQL is functions.sql, the store's functions as every start
// defines them, for tests that compare a database with it.
func FunctionsSQL() string { return functions }

// Functions says which functions the database has: the version recorded
// with the release that defined them (0 and "" for none recorded), and
// the version this binary carries. A recorded version above Known is a
// newer release's: this binary uses those bodies and leaves them.
type Functions struct {
	Version, Known int
	DefinedBy      string
}

// Newer says the database's functions are a newer release's.
func (f Functions) Newer() bool { return f.Version > f.Known }

// Functions reads which functions the database has.
func (s *Store) Functions(ctx context.Context) (Functions, error) {
	f := Functions{Known: s.functions}
	err := s.pool.QueryRow(ctx, `SELECT version, release FROM functions_version WHERE one = 1`).Scan(&f.Version, &f.DefinedBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, nil
	}
	if err != nil {
		return f, classify("read the functions' version", err)
	}
	return f, nil
}
