package pgstore_test

import (
	"context"
	"testing"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/formd/formd/internal/store/storetest"
)

// After PurgeForm and DeleteEmptyForm, no table of the schema — found in
// the catalog, so that a table added later is checked too — holds a row
// of the form; another form keeps every row (storetest.CheckPurge).
func TestPurgeLeavesNoRow(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	s := open(t, u)
	defer s.Close()
	ctx := context.Background()
	conn := pgtest.Connect(t, u)
	rows, err := conn.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name IN ('form', 'entry_id')`)
	if err != nil {
		t.Fatal(err)
	}
	tables := storetest.FormTables(t, rows)
	storetest.CheckPurge(t, s, storetest.Count(t, func(q string) store.Scanner { return conn.QueryRow(ctx, q) }), tables)
}
