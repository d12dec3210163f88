package pgstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// A database written by a newer release (a migration this binary lacks,
// the release recorded in written_by) is refused by name, and the refusal
// changes nothing in it: not its versions, not its tables, not the
// release recorded.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := pgtest.URL(t)
	s, err := pgstore.Open(ctx, pgstore.Options{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	mine, err := pgstore.ReadSchema(ctx, u)
	if err != nil || mine.TooNew() || mine.Version != mine.Known || mine.WrittenBy != release.Name() {
		t.Fatalf("schema of a database this binary wrote: %+v, %v", mine, err)
	}
	conn := pgtest.Connect(t, u)
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES (99, now());
		UPDATE written_by SET release = 'v9.9.9', schema = 99`); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var v string
		if err := conn.QueryRow(ctx, `SELECT (SELECT string_agg(version::text || '@' || applied_at::text, ',' ORDER BY version) FROM schema_migrations)
			|| ' ' || (SELECT release || at::text FROM written_by)
			|| ' ' || (SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = current_schema())`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := state()

	_, err = pgstore.Open(ctx, pgstore.Options{URL: u})
	if !errors.Is(err, release.ErrTooNew) {
		t.Fatalf("open = %v, want release.ErrTooNew", err)
	}
	for _, want := range []string{"formd v9.9.9 (schema 99)", "knows schema " + strconv.Itoa(mine.Known), "run formd v9.9.9 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if after := state(); after != before {
		t.Fatalf("the refused database changed:\n%s\n%s", before, after)
	}
}
