package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// database is one kind of database the runner is tried on: how to open a
// fresh one, its dialect, and a way to query it outside the runner.
type database struct {
	name    string
	dialect migrate.Dialect
	open    func(t *testing.T) (migrate.DB, query)
	// oldTable is the version table as the stores' own code made it
	// before the runner, and oldRecord how it recorded a version.
	oldTable, oldRecord string
}

// query runs a statement and returns the first column of each row as text.
type query func(t *testing.T, q string, args ...any) []string

var databases = []database{
	{
		name: "sqlite",
		dialect: migrate.Dialect{
			CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
			Record:      `INSERT INTO schema_migrations(version, applied_at) VALUES (?, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) ON CONFLICT DO NOTHING`,
			HasTable:    `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?`,
		},
		open:      openSQLite,
		oldTable:  `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
		oldRecord: `INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?) ON CONFLICT DO NOTHING`,
	},
	{
		name: "postgres",
		dialect: migrate.Dialect{
			Lock:        `SELECT pg_advisory_xact_lock(hashtext('formd-migrate:' || coalesce(current_schema(), '')))`,
			CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`,
			Record:      `INSERT INTO schema_migrations(version, applied_at) VALUES ($1, now()) ON CONFLICT DO NOTHING`,
			HasTable:    `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`,
		},
		open:      openPostgres,
		oldTable:  `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`,
		oldRecord: `INSERT INTO schema_migrations(version, applied_at) VALUES ($1, now()) ON CONFLICT DO NOTHING`,
	},
}

func openSQLite(t *testing.T) (migrate.DB, query) {
	db, err := sqlitedb.OpenWriter(filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return migrate.SQL(db), func(t *testing.T, q string, args ...any) []string {
		t.Helper()
		rows, err := db.Query(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v any
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, text(v))
		}
		return out
	}
}

type pgDB struct{ pool *pgxpool.Pool }

func (d pgDB) QueryRow(ctx context.Context, q string, args ...any) migrate.Row {
	return d.pool.QueryRow(ctx, q, args...)
}

func (d pgDB) InTx(ctx context.Context, fn func(migrate.Exec) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		return fn(func(ctx context.Context, q string, args ...any) (int64, error) {
			tag, err := tx.Exec(ctx, q, args...)
			return tag.RowsAffected(), err
		})
	})
}

func openPostgres(t *testing.T) (migrate.DB, query) {
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pgDB{pool}, func(t *testing.T, q string, args ...any) []string {
		t.Helper()
		rows, err := pool.Query(context.Background(), q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, text(vals[0]))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
}

func text(v any) string {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return fmt.Sprint(v)
}

func files(m map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, body := range m {
		fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func forEach(t *testing.T, fn func(t *testing.T, d database)) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

func versions(t *testing.T, q query) []string {
	t.Helper()
	return q(t, `SELECT version FROM schema_migrations ORDER BY version`)
}

// Migrations run in the order of their numbers (9 before 10, which text
// order would not give), each once however often the runner starts.
func TestAppliesInOrderOnce(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, d database) {
		db, q := d.open(t)
		fsys := files(map[string]string{
			"1_log.sql":   `CREATE TABLE log (step integer NOT NULL)`,
			"10_ten.sql":  `INSERT INTO log(step) VALUES (10)`,
			"9_nine.sql":  `INSERT INTO log(step) VALUES (9)`,
			"0002_ok.sql": `INSERT INTO log(step) VALUES (2); INSERT INTO log(step) VALUES (3)`,
		})
		for range 2 {
			if err := migrate.Apply(ctxT(t), db, d.dialect, fsys, "migrations", release.Schema{What: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		if got := q(t, `SELECT step FROM log`); !slices.Equal(got, []string{"2", "3", "9", "10"}) {
			t.Fatalf("steps %v, want 2 3 9 10 once each", got)
		}
		if got := versions(t, q); !slices.Equal(got, []string{"1", "2", "9", "10"}) {
			t.Fatalf("versions %v", got)
		}
	})
}

// A migration that fails leaves nothing of itself: not its first
// statements, not its version; those before it stay, and it runs whole
// once it is fixed.
func TestFailingMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, d database) {
		db, q := d.open(t)
		bad := files(map[string]string{
			"0001_a.sql": `CREATE TABLE a (x integer)`,
			"0002_b.sql": `CREATE TABLE half (x integer); INSERT INTO a(x) VALUES (1); INSERT INTO missing(x) VALUES (1)`,
			"0003_c.sql": `CREATE TABLE c (x integer)`,
		})
		err := migrate.Apply(ctxT(t), db, d.dialect, bad, "migrations", release.Schema{What: "test"})
		if err == nil || !strings.Contains(err.Error(), "0002_b.sql") {
			t.Fatalf("apply = %v, want an error naming 0002_b.sql", err)
		}
		if got := versions(t, q); !slices.Equal(got, []string{"1"}) {
			t.Fatalf("versions after the failure %v, want only 1", got)
		}
		if got := q(t, `SELECT count(*) FROM a`); !slices.Equal(got, []string{"0"}) {
			t.Fatalf("rows of a: %v, want the failed migration's insert gone", got)
		}
		good := files(map[string]string{
			"0001_a.sql": `CREATE TABLE a (x integer)`,
			"0002_b.sql": `CREATE TABLE half (x integer); INSERT INTO a(x) VALUES (1)`,
			"0003_c.sql": `CREATE TABLE c (x integer)`,
		})
		if err := migrate.Apply(ctxT(t), db, d.dialect, good, "migrations", release.Schema{What: "test"}); err != nil {
			t.Fatalf("apply once fixed: %v (did the failed attempt leave table half behind?)", err)
		}
		if got := versions(t, q); !slices.Equal(got, []string{"1", "2", "3"}) {
			t.Fatalf("versions %v", got)
		}
	})
}

// A database the stores' own migration code set up (its version table,
// its records) is recognized: what it applied is not run again, and only
// what is new runs.
func TestOldDatabaseRecognized(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, d database) {
		db, q := d.open(t)
		old := map[int]string{
			1:  `CREATE TABLE a (x integer)`,
			2:  `CREATE TABLE b (x integer)`,
			10: `CREATE TABLE j (x integer)`,
		}
		if err := db.InTx(ctxT(t), func(exec migrate.Exec) error {
			if _, err := exec(ctxT(t), d.oldTable); err != nil {
				return err
			}
			for _, v := range []int{1, 2, 10} {
				args := []any{v}
				if d.name == "sqlite" {
					args = append(args, time.Now().UnixMicro())
				}
				if _, err := exec(ctxT(t), d.oldRecord, args...); err != nil {
					return err
				}
				if _, err := exec(ctxT(t), old[v]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Running 1, 2 or 10 again would fail: their tables exist.
		fsys := files(map[string]string{
			"0001_a.sql":  old[1],
			"0002_b.sql":  old[2],
			"0010_j.sql":  old[10],
			"0011_k.sql":  `CREATE TABLE k (x integer)`,
			"0003_ab.sql": `INSERT INTO a(x) VALUES (3)`,
		})
		if err := migrate.Apply(ctxT(t), db, d.dialect, fsys, "migrations", release.Schema{What: "test"}); err != nil {
			t.Fatalf("apply on the old database: %v", err)
		}
		if got := versions(t, q); !slices.Equal(got, []string{"1", "2", "3", "10", "11"}) {
			t.Fatalf("versions %v", got)
		}
		if got := q(t, `SELECT x FROM a`); !slices.Equal(got, []string{"3"}) {
			t.Fatalf("a: %v", got)
		}
	})
}

// File names the runner refuses, before it changes anything: two files of
// one version (the second would never run), and names without a number.
func TestBadNames(t *testing.T) {
	t.Parallel()
	for name, fsys := range map[string]fstest.MapFS{
		"shared version": files(map[string]string{"0001_a.sql": "SELECT 1", "0002_promise.sql": "SELECT 1", "0002_retention.sql": "SELECT 1"}),
		"no number":      files(map[string]string{"init.sql": "SELECT 1"}),
		"no name":        files(map[string]string{"0001.sql": "SELECT 1"}),
		"zero":           files(map[string]string{"0000_a.sql": "SELECT 1"}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db, q := openSQLite(t)
			err := migrate.Apply(ctxT(t), db, databases[0].dialect, fsys, "migrations", release.Schema{What: "test"})
			if !errors.Is(err, migrate.ErrBadName) {
				t.Fatalf("apply = %v, want ErrBadName", err)
			}
			if got := q(t, `SELECT name FROM sqlite_master WHERE name = 'schema_migrations'`); len(got) != 0 {
				t.Fatalf("the refused directory changed the database: %v", got)
			}
		})
	}
}

// A database that records a migration the directory does not have was
// written by a newer release: refused with both versions named, before
// the runner writes anything (not even the missing migrations below it).
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, d database) {
		db, q := d.open(t)
		newer := files(map[string]string{
			"0001_a.sql": `CREATE TABLE a (x integer)`,
			"0004_d.sql": `CREATE TABLE d (x integer)`,
		})
		if err := migrate.Apply(ctxT(t), db, d.dialect, newer, "migrations", release.Schema{What: "test"}); err != nil {
			t.Fatal(err)
		}
		older := files(map[string]string{
			"0001_a.sql": `CREATE TABLE a (x integer)`,
			"0002_b.sql": `CREATE TABLE b (x integer)`,
			"0003_c.sql": `CREATE TABLE c (x integer)`,
		})
		err := migrate.Apply(ctxT(t), db, d.dialect, older, "migrations", release.Schema{What: "store", Where: "here"})
		var tooNew *release.TooNewError
		if !errors.As(err, &tooNew) || !errors.Is(err, release.ErrTooNew) {
			t.Fatalf("apply = %v, want a *release.TooNewError", err)
		}
		if s := tooNew.Schema; s.Version != 4 || s.Known != 3 || !slices.Equal(s.Unknown, []int{4}) {
			t.Fatalf("refused schema %+v, want version 4, known 3, unknown [4]", s)
		}
		for _, want := range []string{"store here", "schema 4", "knows schema 3", "or newer"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not say %q", err, want)
			}
		}
		if got := versions(t, q); !slices.Equal(got, []string{"1", "4"}) {
			t.Fatalf("versions after the refusal %v, want 1 4 untouched", got)
		}
		st, err := migrate.Status(ctxT(t), db, d.dialect, older, "migrations", release.Schema{})
		if err != nil || !st.TooNew() {
			t.Fatalf("status = %+v, %v; want too new", st, err)
		}
	})
}
