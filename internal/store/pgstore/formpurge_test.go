package pgstore_test

import (
	"context"
	"testing"

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
	tables := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		tables[table] = append(tables[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	storetest.CheckPurge(t, s, func(q string) int {
		var n int
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}, tables)
}
