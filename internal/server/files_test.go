package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// TestDataFilesAreTheOwners: the data directory is 0700 and its database
// files 0600 whatever they were, and a --data path with ? and # works.
func TestDataFilesAreTheOwners(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "odd?name#1")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"journal.db", "store.db"} {
		if err := os.WriteFile(filepath.Join(data, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := servertest.Start(t, "id: f\nfields: [{name: n, type: text}]\n", servertest.Options{Data: data})
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v %v, want 0700", fi.Mode().Perm(), err)
	}
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	dbs := 0
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(e.Name(), ".db") || e.Name() == "secret" {
			dbs++
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, want 0600", e.Name(), fi.Mode().Perm())
			}
		}
	}
	if dbs < 5 {
		t.Fatalf("only %d database files in the odd path: %v", dbs, entries)
	}
	h.Stop()
}
