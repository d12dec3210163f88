package sqlitejournal_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb/sqlitedbtest"
)

// A journal file of a newer schema (user_version past this binary's, the
// release recorded in journal_written_by) is refused by name, and the
// refusal leaves the file byte for byte as it was.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	mine, err := sqlitejournal.ReadSchema(ctx, path)
	if err != nil || mine.TooNew() || mine.Version != sqlitejournal.Known || mine.WrittenBy != release.Name() {
		t.Fatalf("schema of a file this binary wrote: %+v, %v", mine, err)
	}
	future := sqlitejournal.Known + 1
	sqlitedbtest.RefusesNewer(t, path, `UPDATE journal_written_by SET release = 'v9.9.9'; PRAGMA user_version = `+strconv.Itoa(future),
		future, sqlitejournal.Known, func() error {
			_, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: path})
			return err
		})
}

// Each migration of the journal runs once, in its transaction with the
// version that records it: opening a migrated file again changes neither
// its version nor its objects.
func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	for i := 0; i < 2; i++ {
		j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: path})
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		j.Close()
	}
	s, err := sqlitejournal.ReadSchema(ctx, path)
	if err != nil || s.Version != sqlitejournal.Known {
		t.Fatalf("schema %+v, %v; want version %d", s, err, sqlitejournal.Known)
	}
}
