package sqlitestore_test

import (
	"context"
	"github.com/formd/formd/internal/journal"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/store/storetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openOwn opens the store on a file of its own, as a server without the
// embedded fast path does (compare openShared); each call opens the same
// file again, as after a restart.
func openOwn(t *testing.T, now func() time.Time) func() *sqlitestore.Store {
	path := filepath.Join(t.TempDir(), "store.db")
	return func() *sqlitestore.Store {
		s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path, Now: now})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		open := openOwn(t, now)
		return func() store.Store { return open() }
	})
}

func TestErasureNoticeKept(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	count := storetest.Count(t, func(q string) store.Scanner { return db.QueryRow(q) })
	storetest.RunErasureNoticeKept(t, s, func() int { return count(`SELECT count(*) FROM events WHERE notice_to IS NOT NULL`) })
}

func TestAccounts(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T, now func() time.Time) func() store.Store {
		open := openOwn(t, now)
		return func() store.Store { return open() }
	})
}

// A store file set up by the migration code before package migrate (the
// same version table, versions 1, 2, 3, 10 and 11 recorded, each applied
// with its record in one transaction) opens: nothing is applied twice,
// its entries are there, and the migrations since are applied.
func TestOpensAStoreOfTheOldMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		v    int
		name string
	}{{1, "0001_init.sql"}, {2, "0002_promise.sql"}, {3, "0003_outbox.sql"}, {10, "0010_accounts.sql"}, {11, "0011_console.sql"}} {
		body, err := os.ReadFile(filepath.Join("migrations", f.name))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, f.v, time.Now().UnixMicro()); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// An entry with a participant claim, kept as hex text then.
	if _, err := db.Exec(`INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
		VALUES ('old-1', 1, 'f', 's', 'k', 'stored', 'stored', 1, 1, x'00', '0123456789abcdef0123456789abcdef', '{}');
		INSERT INTO claims(form, claim, entry_id) VALUES ('f', '0123456789abcdef0123456789abcdef', 'old-1')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path})
	if err != nil {
		t.Fatalf("open the old store: %v", err)
	}
	defer s.Close()
	if o, ok, err := s.Outcome(ctx, "f", "k"); err != nil || !ok || o.ID != "old-1" {
		t.Fatalf("the old store's entry: %+v %v %v", o, ok, err)
	}
	db, err = sqlitedb.OpenReader(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var versions string
	if err := db.QueryRow(`SELECT group_concat(version, ',') FROM (SELECT version FROM schema_migrations ORDER BY version)`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	// Later releases' migrations follow; these must be there.
	if !strings.HasPrefix(versions, "1,2,3,10,11,12,15,16,") {
		t.Fatalf("versions %s, want 1,2,3,10,11 kept and 12, 15, 16 and later ones added", versions)
	}
	// The old claim still holds its participant: the same token is a
	// duplicate.
	outs, err := s.Apply(ctx, []journal.Entry{{Seq: 2, ID: "new-1", Site: "s", Form: "f", Key: "k2", ReceivedAt: time.Now(),
		Claims: []string{"0123456789abcdef0123456789abcdef"}, Data: []byte(`{}`)}})
	if err != nil || outs[0].Decision != store.StatusDuplicate {
		t.Fatalf("a claim of the old store: %+v %v", outs, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entries_retention'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the retention index: %d %v", n, err)
	}
}

func TestUploads(t *testing.T) {
	storetest.RunUploads(t, func(t *testing.T, now func() time.Time) func() storetest.UploadStore {
		open := openOwn(t, now)
		return func() storetest.UploadStore { return open() }
	})
}

func TestRefusals(t *testing.T) {
	storetest.RunRefusals(t, func(t *testing.T) func() storetest.RefusalStore {
		open := openOwn(t, nil)
		return func() storetest.RefusalStore { return open() }
	})
}

func TestChallenges(t *testing.T) {
	storetest.RunChallenges(t, func(t *testing.T) func() storetest.ChallengeStore {
		open := openOwn(t, nil)
		return func() storetest.ChallengeStore { return open() }
	})
}
