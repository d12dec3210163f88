package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb/sqlitedbtest"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// A file written by a newer release (a migration this binary lacks, the
// release recorded in written_by) is refused by name, and the refusal
// leaves the file byte for byte as it was.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	mine, err := sqlitestore.ReadSchema(ctx, path)
	if err != nil || mine.TooNew() || mine.Version != mine.Known || mine.WrittenBy != release.Name() {
		t.Fatalf("schema of a file this binary wrote: %+v, %v", mine, err)
	}
	sqlitedbtest.RefusesNewer(t, path, `INSERT INTO schema_migrations(version, applied_at) VALUES (99, 0);
		UPDATE written_by SET release = 'v9.9.9', schema = 99`, 99, mine.Known, func() error {
		_, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
		return err
	})
	got, err := sqlitestore.ReadSchema(ctx, path)
	if err != nil || !got.TooNew() || got.Version != 99 || got.WrittenBy != "v9.9.9" {
		t.Fatalf("ReadSchema = %+v, %v; want version 99 written by v9.9.9, too new", got, err)
	}
}
