package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
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
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES (99, 0);
		UPDATE written_by SET release = 'v9.9.9', schema = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close() // the last connection: the WAL is checkpointed into the file and removed
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	_, err = sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
	var tooNew *release.TooNewError
	if !errors.As(err, &tooNew) {
		t.Fatalf("open = %v, want a *release.TooNewError", err)
	}
	for _, want := range []string{path, "formd v9.9.9 (schema 99)", "knows schema " + itoa(mine.Known), "run formd v9.9.9 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the refused file changed")
	}
	got, err := sqlitestore.ReadSchema(ctx, path)
	if err != nil || !got.TooNew() || got.Version != 99 || got.WrittenBy != "v9.9.9" {
		t.Fatalf("ReadSchema = %+v, %v; want version 99 written by v9.9.9, too new", got, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
