package backup_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/sqlitedb"
)

const forms = `
id: fair
fields:
  - {name: name, type: text, required: true}
`

// served makes a data directory with n stored entries, written by a real
// server that has stopped.
func served(t *testing.T, n int) string {
	t.Helper()
	h := servertest.Start(t, forms, servertest.Options{})
	c := servertest.Client()
	for i := range n {
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/fair/submissions", strings.NewReader(fmt.Sprintf(`{"name":"p%d"}`, i)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("k%d", i))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("submission %d: %d", i, resp.StatusCode)
		}
	}
	h.Stop()
	return h.Data
}

func take(t *testing.T, data string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "b")
	m, err := backup.Take(context.Background(), backup.Options{Data: data, Drivers: server.BackupDrivers(), To: to, Version: "v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Entries["stored"] == 0 || m.Journaled != m.Entries["stored"] {
		t.Fatalf("manifest counts: %+v journaled %d", m.Entries, m.Journaled)
	}
	return to
}

// copyDir copies a backup, to damage the copy.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func editManifest(t *testing.T, dir string, edit func(*backup.Manifest)) {
	t.Helper()
	m, err := backup.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	edit(&m)
	raw, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, backup.ManifestFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// resum records a file's new size and sum in the manifest, as a backup
// of that file would have.
func resum(t *testing.T, dir, name string, schema int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	editManifest(t, dir, func(m *backup.Manifest) {
		for i := range m.Files {
			if m.Files[i].Name == name {
				m.Files[i].Size = int64(len(raw))
				m.Files[i].SHA256 = sha(raw)
				if schema >= 0 {
					m.Files[i].Schema = schema
				}
			}
		}
	})
}

// TestVerify finds each kind of damage and names the file.
func TestVerify(t *testing.T) {
	t.Parallel()
	good := take(t, served(t, 20))
	if _, err := backup.Verify(context.Background(), server.BackupDrivers(), good); err != nil {
		t.Fatalf("a whole backup: %v", err)
	}
	for _, tc := range []struct {
		name   string
		damage func(dir string)
		want   []string
	}{
		{"a flipped byte", func(dir string) { flip(t, filepath.Join(dir, backup.StoreFile), 5000) },
			[]string{backup.StoreFile, "does not match its SHA-256"}},
		{"a cut file", func(dir string) { os.Truncate(filepath.Join(dir, backup.JournalFile), 4096) },
			[]string{backup.JournalFile, "bytes, the manifest says"}},
		{"a missing file", func(dir string) { os.Remove(filepath.Join(dir, backup.SecretFile)) },
			[]string{backup.SecretFile, "is missing"}},
		{"no manifest", func(dir string) { os.Remove(filepath.Join(dir, backup.ManifestFile)) },
			[]string{"has no manifest.json", "did not finish"}},
		{"a manifest that is not one", func(dir string) { os.WriteFile(filepath.Join(dir, backup.ManifestFile), []byte("{"), 0o600) },
			[]string{"is not a formd backup manifest"}},
		{"a damaged database whose sum was made to match", func(dir string) {
			flip(t, filepath.Join(dir, backup.StoreFile), pageOf(t, filepath.Join(dir, backup.StoreFile), "entries_form_key"))
			resum(t, dir, backup.StoreFile, -1)
		}, []string{backup.StoreFile, "integrity check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, good)
			tc.damage(dir)
			_, err := backup.Verify(context.Background(), server.BackupDrivers(), dir)
			if err == nil {
				t.Fatal("verify passed a damaged backup")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// pageOf is the offset of the root page of a table or index.
func pageOf(t *testing.T, path, name string) int64 {
	t.Helper()
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root, size int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = ?`, name).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	return (root - 1) * size
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 64)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefuses: each refusal names the path and the fix, and
// changes nothing in the target.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data := served(t, 5)
	good := take(t, data)
	known, err := server.KnownSchemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newerSchema := copyDir(t, good)
	{
		w, err := sqlitedb.OpenWriter(filepath.Join(newerSchema, backup.StoreFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Exec(`INSERT INTO schema_migrations(version, applied_at) VALUES (9999, 0)`); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Exec(`PRAGMA journal_mode = DELETE`); err != nil {
			t.Fatal(err)
		}
		w.Close()
		resum(t, newerSchema, backup.StoreFile, 9999)
	}
	newerRelease := copyDir(t, good)
	editManifest(t, newerRelease, func(m *backup.Manifest) { m.Formd = "v9.0.0" })
	damaged := copyDir(t, good)
	flip(t, filepath.Join(damaged, backup.JournalFile), 100)

	for _, tc := range []struct {
		name, from string
		target     func(t *testing.T) string
		force      bool
		want       []string
	}{
		{"a newer schema", newerSchema, newDir, false, []string{newerSchema, "schema version 9999", fmt.Sprintf("knows store.db schema version %d", known[backup.StoreFile]), "or newer"}},
		{"a newer release", newerRelease, newDir, false, []string{newerRelease, "formd v9.0.0", "this formd v1.0.0", "restore it with formd v9.0.0 or newer"}},
		{"a damaged backup", damaged, newDir, false, []string{backup.JournalFile, "SHA-256"}},
		{"a directory that is not empty", good, func(t *testing.T) string {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "notes.txt"), []byte("mine"), 0o600)
			return d
		}, false, []string{"is not empty", "notes.txt", "--force"}},
		{"a running server's directory, even with --force", good, func(t *testing.T) string {
			release, err := server.LockData(data)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(release)
			return data
		}, true, []string{"refusing to restore into " + data, "another formd serve is running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target(t)
			before := listing(t, target)
			_, release, err := backup.Restore(ctx, backup.RestoreOptions{Drivers: server.BackupDrivers(), From: tc.from, Data: target, Force: tc.force, Version: "v1.0.0", Known: known, Lock: server.LockData})
			if err == nil {
				release()
				t.Fatal("restore succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if after := listing(t, target); after != before {
				t.Errorf("the target changed: %s, was %s", after, before)
			}
		})
	}
	var nb *backup.NewerError
	if _, _, err := backup.Restore(ctx, backup.RestoreOptions{Drivers: server.BackupDrivers(), From: newerSchema, Data: newDir(t), Version: "v1.0.0", Known: known, Lock: server.LockData}); !errors.As(err, &nb) {
		t.Errorf("a newer schema: %v, want a NewerError", err)
	}
}

func newDir(t *testing.T) string { return filepath.Join(t.TempDir(), "new") }

// listing names the files of dir with their sums ("" for no directory).
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, e := range entries {
		raw, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s:%s ", e.Name(), sha(raw))
	}
	return b.String()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
