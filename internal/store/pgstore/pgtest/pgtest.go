// Package pgtest gives each test a schema of its own in the PostgreSQL
// database named by FORMD_TEST_POSTGRES_URL, so that tests run in parallel
// and leave nothing behind; it skips the test when the variable is unset,
// and AnnounceSkip says so once for the package — unless
// FORMD_REQUIRE_SERVICES=1 (set by .ci/run), when the test fails instead.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable of the test database.
const EnvURL = "FORMD_TEST_POSTGRES_URL"

// EnvRequire, set to 1, makes a missing or unreachable database fail the
// tests that need it rather than skip them: a CI that is meant to run the
// PostgreSQL suites must not pass with an "ok" line because they skipped.
const EnvRequire = "FORMD_REQUIRE_SERVICES"

func required() bool { return os.Getenv(EnvRequire) == "1" }

// announced is set once AnnounceSkip has said why the tests skip, so
// that each skip need not say it again.
var announced atomic.Bool

// AnnounceSkip is for a package's TestMain: when EnvURL is unset, it
// prints one line saying that the PostgreSQL suites (named by suites)
// are skipped and why, and the tests then skip without repeating it.
// With EnvURL set it prints nothing.
func AnnounceSkip(suites string) {
	if os.Getenv(EnvURL) != "" || required() {
		return
	}
	announced.Store(true)
	fmt.Printf("skipping %s: %s is not set (see docs/development.md)\n", suites, EnvURL)
}

// URL creates a fresh schema and returns the database URL with that schema
// as its search_path; the schema is dropped when the test ends.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if required() {
			t.Fatalf("%s=1 and %s is not set: this run must test against PostgreSQL (such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvRequire, EnvURL)
		}
		if announced.Load() {
			t.SkipNow()
		}
		t.Skipf("set %s (such as postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL tests", EnvURL)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "formd_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s (is PostgreSQL running?): %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Connect is a connection to url for a test's own reads and writes,
// closed when the test ends.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Functions lists the functions of the schema of url (its search_path),
// each by name and arguments, with its result, language and body.
func Functions(t testing.TB, url string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
			pg_get_function_result(p.oid) || ' ' || l.lanname || ' ' || p.prosrc
		FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		WHERE p.pronamespace = current_schema()::regnamespace`)
	out := map[string]string{}
	var name, def string
	if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error { out[name] = def; return nil }); err != nil {
		t.Fatalf("list functions: %v", err)
	}
	return out
}

// Defined is Functions of a fresh schema in which sql (CREATE FUNCTION
// statements) ran, with their bodies not checked against tables it lacks.
func Defined(t testing.TB, sql string) map[string]string {
	t.Helper()
	u := URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET check_function_bodies = off;\n"+sql); err != nil {
		t.Fatalf("define functions: %v", err)
	}
	return Functions(t, u)
}

// SameFunctions fails t unless got and want list the same functions
// with the same bodies.
func SameFunctions(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for name, def := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: no function %s", what, name)
		} else if g != def {
			t.Errorf("%s: %s is\n%s\nwant as in the file:\n%s", what, name, g, def)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: function %s is not in the file", what, name)
		}
	}
}
