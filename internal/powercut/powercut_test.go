package powercut_test

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/powercut"
	_ "github.com/mattn/go-sqlite3"
)

func write(t *testing.T, path, data string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	if err := atomicfile.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, f *powercut.FS) {
	t.Helper()
	if err := f.Cut(); err != nil {
		t.Fatalf("cut: %v", err)
	}
	if err := f.Remount(); err != nil {
		t.Fatalf("remount: %v", err)
	}
}

// absent is the content of a file that does not exist.
const absent = "<absent>"

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return absent
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The model, case by case: what a cut keeps is what was fsynced, data
// by the file's fsync and names by their directory's.
func TestCutKeepsOnlyWhatWasSynced(t *testing.T) {
	big := string(make([]byte, 3*4096+100))
	// fileInA makes directories a and b, and a file f in a.
	fileInA := func(t *testing.T, d string) {
		os.Mkdir(d+"/a", 0o755)
		os.Mkdir(d+"/b", 0o755)
		write(t, d+"/a/f", "moved", true)
	}
	// moveToB moves a/f to b/f and syncs only the directory synced.
	moveToB := func(synced string) func(t *testing.T, d string) {
		return func(t *testing.T, d string) {
			if err := os.Rename(d+"/a/f", d+"/b/f"); err != nil {
				t.Fatal(err)
			}
			syncDir(t, d+"/"+synced)
		}
	}
	for _, tc := range []struct {
		name string
		// setup runs and is made durable (everything synced) first.
		setup func(t *testing.T, d string)
		// change runs before the cut.
		change func(t *testing.T, d string)
		want   map[string]string
	}{
		{"a new file, nothing synced, goes",
			nil,
			func(t *testing.T, d string) { write(t, d+"/f", "new", false) },
			map[string]string{"f": absent}},
		{"a new file synced, its directory not: its name goes",
			nil,
			func(t *testing.T, d string) { write(t, d+"/f", "new", true) },
			map[string]string{"f": absent}},
		{"a new file and its directory synced stays",
			nil,
			func(t *testing.T, d string) { write(t, d+"/f", "new", true); syncDir(t, d) },
			map[string]string{"f": "new"}},
		{"a name synced without the file's data: empty",
			nil,
			func(t *testing.T, d string) { write(t, d+"/f", "new", false); syncDir(t, d) },
			map[string]string{"f": ""}},
		{"an overwrite not synced: the old bytes",
			func(t *testing.T, d string) { write(t, d+"/f", "old contents", true) },
			func(t *testing.T, d string) { write(t, d+"/f", "new", false) },
			map[string]string{"f": "old contents"}},
		{"an append over several blocks not synced: the old size",
			func(t *testing.T, d string) { write(t, d+"/f", "head", true) },
			func(t *testing.T, d string) {
				f, err := os.OpenFile(d+"/f", os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(big)
				f.Close()
			},
			map[string]string{"f": "head"}},
		{"a rewrite of a big file, synced, stays",
			func(t *testing.T, d string) { write(t, d+"/f", big, true) },
			func(t *testing.T, d string) { write(t, d+"/f", "small", true) },
			map[string]string{"f": "small"}},
		{"an atomic replace (atomicfile) stays",
			func(t *testing.T, d string) { write(t, d+"/f", "old", true) },
			func(t *testing.T, d string) {
				if err := atomicfile.WriteFile(d+"/f", []byte("new"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			map[string]string{"f": "new"}},
		{"a rename over a file without the directory's fsync: both as before",
			func(t *testing.T, d string) { write(t, d+"/f", "old", true); write(t, d+"/g", "other", true) },
			func(t *testing.T, d string) {
				write(t, d+"/tmp", "new", true)
				if err := os.Rename(d+"/tmp", d+"/f"); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(d+"/g", d+"/h"); err != nil {
					t.Fatal(err)
				}
			},
			map[string]string{"f": "old", "tmp": absent, "g": "other", "h": absent}},
		{"an unlink without the directory's fsync comes back",
			func(t *testing.T, d string) { write(t, d+"/f", "kept", true) },
			func(t *testing.T, d string) {
				if err := os.Remove(d + "/f"); err != nil {
					t.Fatal(err)
				}
			},
			map[string]string{"f": "kept"}},
		{"an unlink synced stays gone",
			func(t *testing.T, d string) { write(t, d+"/f", "kept", true) },
			func(t *testing.T, d string) {
				if err := os.Remove(d + "/f"); err != nil {
					t.Fatal(err)
				}
				syncDir(t, d)
			},
			map[string]string{"f": absent}},
		{"a new directory not synced in its parent goes with what is in it",
			nil,
			func(t *testing.T, d string) {
				if err := os.Mkdir(d+"/sub", 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, d+"/sub/f", "x", true)
				syncDir(t, d+"/sub")
			},
			map[string]string{"sub/f": absent}},
		{"a directory renamed and synced keeps its synced contents under the new name",
			func(t *testing.T, d string) { os.Mkdir(d+"/a", 0o755) },
			func(t *testing.T, d string) {
				write(t, d+"/a/f", "in a", true)
				syncDir(t, d+"/a")
				write(t, d+"/a/g", "not synced", true)
				if err := os.Rename(d+"/a", d+"/b"); err != nil {
					t.Fatal(err)
				}
				syncDir(t, d)
			},
			map[string]string{"a/f": absent, "b/f": "in a", "b/g": absent}},
		{"a hard link not synced goes, the first name stays",
			func(t *testing.T, d string) { write(t, d+"/f", "data", true) },
			func(t *testing.T, d string) {
				if err := os.Link(d+"/f", d+"/g"); err != nil {
					t.Fatal(err)
				}
			},
			map[string]string{"f": "data", "g": absent}},
		{"a move to another directory, only that one synced, is durable whole",
			fileInA, moveToB("b"),
			map[string]string{"a/f": absent, "b/f": "moved"}},
		{"a move to another directory, only the old one synced, is undone",
			fileInA, moveToB("a"),
			map[string]string{"a/f": "moved", "b/f": absent}},
		{"a truncation not synced: the old bytes",
			func(t *testing.T, d string) { write(t, d+"/f", big+"tail", true) },
			func(t *testing.T, d string) {
				if err := os.Truncate(d+"/f", 10); err != nil {
					t.Fatal(err)
				}
			},
			map[string]string{"f": big + "tail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := powercut.MountTest(t)
			d := f.Mountpoint()
			if tc.setup != nil {
				tc.setup(t, d)
				filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
					if err == nil && e.IsDir() {
						syncDir(t, p)
					}
					return nil
				})
			}
			tc.change(t, d)
			cut(t, f)
			for name, want := range tc.want {
				if got := read(t, filepath.Join(d, name)); got != want {
					if len(got) > 40 || len(want) > 40 {
						t.Errorf("%s: %d bytes after the cut, want %d", name, len(got), len(want))
						continue
					}
					t.Errorf("%s: %q after the cut, want %q", name, got, want)
				}
			}
		})
	}
}

// The filesystem models the loss a power cut brings: SQLite with
// synchronous=OFF (no fsync) loses commits on it, with synchronous=FULL
// in WAL mode (formd's) it loses none. In rollback-journal mode a
// commit is the journal's unlink, which SQLite syncs (the directory)
// only with synchronous=EXTRA: FULL may lose the last commit, EXTRA
// none, as SQLite's documentation says — and as this filesystem shows.
func TestSQLiteLosesCommitsOnlyWithoutSync(t *testing.T) {
	const commits = 40
	for _, tc := range []struct {
		mode, sync string
		minKept    int // commits that must survive the cut
		wantLoss   bool
	}{
		{"WAL", "OFF", 0, true},
		{"WAL", "FULL", commits, false},
		{"DELETE", "OFF", 0, true},
		{"DELETE", "FULL", commits - 1, false},
		{"DELETE", "EXTRA", commits, false},
	} {
		t.Run(tc.mode+"/"+tc.sync, func(t *testing.T) {
			f := powercut.MountTest(t)
			dir := filepath.Join(f.Mountpoint(), "db")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			syncDir(t, f.Mountpoint())
			path := filepath.Join(dir, "test.db")
			db, err := sql.Open("sqlite3", fmt.Sprintf("file:%s?_journal_mode=%s&_synchronous=%s", path, tc.mode, tc.sync))
			if err != nil {
				t.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE t (n INTEGER PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			for i := range commits {
				if _, err := db.Exec(`INSERT INTO t (n) VALUES (?)`, i); err != nil {
					t.Fatal(err)
				}
			}
			// The cut comes with the process still holding the
			// database: nothing is closed, checkpointed or synced.
			if err := f.Cut(); err != nil {
				t.Fatalf("cut: %v", err)
			}
			db.Close() // on a gone mount: errors are expected and ignored
			if err := f.Remount(); err != nil {
				t.Fatal(err)
			}
			kept, err := count(path)
			t.Logf("%s, synchronous=%s: %d of %d commits after the cut (%v)", tc.mode, tc.sync, kept, commits, err)
			switch {
			case tc.wantLoss && err == nil && kept == commits:
				t.Fatalf("synchronous=OFF kept all %d commits: the filesystem did not lose the unsynced writes", commits)
			case !tc.wantLoss && (err != nil || kept < tc.minKept):
				t.Fatalf("synchronous=%s: %d of %d commits, want at least %d (%v)", tc.sync, kept, commits, tc.minKept, err)
			}
		})
	}
}

// count opens the database afresh and counts its rows, after checking
// its integrity.
func count(path string) (int, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil {
		return 0, err
	}
	if ok != "ok" {
		return 0, fmt.Errorf("integrity_check: %s", ok)
	}
	var n int
	err = db.QueryRow(`SELECT count(*) FROM t`).Scan(&n)
	return n, err
}

// A directory made with os.MkdirAll, and a file written into it with
// atomicfile (synced, renamed, the directory synced), goes at a cut: the
// new directory's own name was never synced into its parent. With
// atomicfile.MkdirAll it stays. (formd's --data, uploads, backup and
// outbox directories were made the first way.)
func TestMkdirAllSurvivesACut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mkdir func(string, os.FileMode) error
		want  string
	}{
		{"os.MkdirAll", os.MkdirAll, absent},
		{"atomicfile.MkdirAll", atomicfile.MkdirAll, "kept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := powercut.MountTest(t)
			dir := filepath.Join(f.Mountpoint(), "a", "b")
			if err := tc.mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := atomicfile.WriteFile(filepath.Join(dir, "f"), []byte("kept"), 0o600); err != nil {
				t.Fatal(err)
			}
			cut(t, f)
			if got := read(t, filepath.Join(dir, "f")); got != tc.want {
				t.Fatalf("after the cut: %q, want %q", got, tc.want)
			}
		})
	}
}
