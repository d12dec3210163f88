// Package sqlitedbtest holds the checks that the tests of formd's SQLite
// files share: the journal's file and the store's each meet them with
// their own schema.
package sqlitedbtest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
)

// RefusesNewer makes the file at path one that release v9.9.9 wrote at
// schema, past the known one of this binary (tamper, run on the file's
// writer, records both), then checks that open refuses it by name — a
// *release.TooNewError that names the file, both schemas and the release
// to run — and that the refusal leaves the file byte for byte as it was.
func RefusesNewer(t *testing.T, path, tamper string, schema, known int, open func() error) {
	t.Helper()
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(tamper); err != nil {
		t.Fatal(err)
	}
	db.Close() // the last connection: the WAL is checkpointed into the file and removed
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	err = open()
	var tooNew *release.TooNewError
	if !errors.As(err, &tooNew) {
		t.Fatalf("open = %v, want a *release.TooNewError", err)
	}
	for _, want := range []string{path, "formd v9.9.9 (schema " + strconv.Itoa(schema) + ")", "knows schema " + strconv.Itoa(known), "run formd v9.9.9 or newer"} {
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
}
