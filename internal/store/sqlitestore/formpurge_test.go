package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
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
	rows, err := db.Query(`SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND p.name IN ('form', 'entry_id')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tables := storetest.FormTables(t, rows)
	storetest.CheckPurge(t, s, storetest.Count(t, func(q string) store.Scanner { return db.QueryRow(q) }), tables)
}
