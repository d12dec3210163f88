package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/store/storetest"
)

// After PurgeForm and DeleteEmptyForm, no table of the schema — found in
// the catalog, so that a table added later is checked too — holds a row
// of the form; another form keeps every row.
func TestPurgeLeavesNoRow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sqlitedb.OpenReader(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := formTables(t, db)
	storetest.CheckPurge(t, s, func(q string) int {
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}, tables)
}

// formTables lists the schema's tables with a form or entry_id column.
func formTables(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND p.name IN ('form', 'entry_id')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
