package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/store/storetest"
)

// openShared opens the store as the embedded fast path does
// (server.openEmbedded): attached to the writer it shares with the
// journal's file, which the store closes with itself.
func openShared(t *testing.T, now func() time.Time) func() *sqlitestore.Store {
	dir := t.TempDir()
	return func() *sqlitestore.Store { return openSharedIn(t, dir, now) }
}

// openSharedIn opens the store of dir (store.db) on the writer it shares
// with the journal's file there (journal.db).
func openSharedIn(t *testing.T, dir string, now func() time.Time) *sqlitestore.Store {
	t.Helper()
	w, err := sqlitedb.OpenShared(filepath.Join(dir, "journal.db"), filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatalf("open the shared writer: %v", err)
	}
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(dir, "store.db"), Writer: w, Now: now})
	if err != nil {
		w.Close()
		t.Fatalf("open: %v", err)
	}
	if !s.Shared() {
		t.Fatal("a store opened on the shared writer says it is not shared")
	}
	return s
}

// The conformance suites on the shared writer, as they run on a file of
// the store's own (TestConformance, TestAccounts, TestUploads).
func TestConformanceShared(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		open := openShared(t, now)
		return func() store.Store { return open() }
	})
}

func TestAccountsShared(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T, now func() time.Time) func() store.Store {
		open := openShared(t, now)
		return func() store.Store { return open() }
	})
}

func TestUploadsShared(t *testing.T) {
	storetest.RunUploads(t, func(t *testing.T, now func() time.Time) func() storetest.UploadStore {
		open := openShared(t, now)
		return func() storetest.UploadStore { return open() }
	})
}
