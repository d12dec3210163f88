package pgstore_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// A database migrated from nothing has exactly the functions of
// functions.sql, body for body; and a body changed behind the store's back
// is defined again at the next start.
func TestFunctionsSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := pgtest.Defined(t, pgstore.FunctionsSQL())
	if len(want) < 5 {
		t.Fatalf("functions.sql defines %d functions: %v", len(want), slices.Sorted(maps.Keys(want)))
	}
	u := pgtest.URL(t)
	open := func() {
		t.Helper()
		s, err := pgstore.Open(ctx, pgstore.Options{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	open()
	pgtest.SameFunctions(t, "migrated from nothing", pgtest.Functions(t, u), want)

	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE OR REPLACE FUNCTION formd_claim_uploads(p_id text, p_form text, p_data bytea) RETURNS text
		LANGUAGE sql AS $$ SELECT 'upload-missing' $$`); err != nil {
		t.Fatal(err)
	}
	open()
	pgtest.SameFunctions(t, "reopened after a change behind its back", pgtest.Functions(t, u), want)
}
