package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/sqlitedb"
)

// TestSharedFilesShareNoName pins the rule the embedded fast path rests
// on: the journal's file is main on the shared writer and the store's is
// attached, so an unqualified name resolves to the journal first. No
// table, view, index or trigger of one file may have a name of the
// other's, or the store's statements would meet the journal's object.
func TestSharedFilesShareNoName(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	j, st, err := server.OpenDrivers(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	st.Close()
	journal := objectNames(t, filepath.Join(cfg.Data, "journal.db"))
	store := objectNames(t, filepath.Join(cfg.Data, "store.db"))
	if len(journal) == 0 || len(store) == 0 {
		t.Fatalf("journal %v, store %v: want the objects of both files", journal, store)
	}
	for name, typ := range journal {
		if other, ok := store[name]; ok {
			t.Errorf("%q is a %s of the journal and a %s of the store: rename the journal's (a migration of sqlitejournal)", name, typ, other)
		}
	}
}

// objectNames lists a file's schema objects, name → type.
func objectNames(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := sqlitedb.OpenReader(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, type FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		out[name] = typ
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Data of which one part is newer than this binary (here the store) is
// refused before either part is opened: the other file (the journal) is
// byte for byte as it was, not stamped with this release.
func TestNewerStoreRefusedBeforeTheJournalIsTouched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	j, st, err := server.OpenDrivers(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	st.Close()
	db, err := sqlitedb.OpenWriter(filepath.Join(cfg.Data, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES (99, 0); UPDATE written_by SET release = 'v9.9.9'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	journalPath := filepath.Join(cfg.Data, "journal.db")
	before, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = server.OpenDrivers(ctx, cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, release.ErrTooNew) || !strings.Contains(err.Error(), "run formd v9.9.9 or newer") {
		t.Fatalf("open = %v, want the newer store refused, naming v9.9.9", err)
	}
	after, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the journal changed although the store was refused")
	}
}
