package backup

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testLock stands in for the server's lock (which this package's tests
// cannot import): it makes the directory, as the real one does.
func testLock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return func() {}, os.WriteFile(filepath.Join(dir, lockFile), nil, 0o600)
}

// tree reads the SHA-256 of every file under dir that a restore
// replaces (the lock and the marker are left out); nil for no directory.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() || !own(strings.Split(rel, string(filepath.Separator))[0]) {
			return nil
		}
		_, s, err := fileSum(p)
		out[rel] = s
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// killAt is a crash hook that stops a restore once n steps are done; it
// counts the steps into *seen.
func killAt(n int, seen *[]string) func(string) bool {
	return func(step string) bool {
		*seen = append(*seen, step)
		return len(*seen) == n
	}
}

// TestRestoreKilledAtEveryStep kills a restore after each of its steps —
// into a new directory, and with --force over a data directory holding
// other data — and then kills the finish (--resume) or the undo
// (--abort) after each of its own steps too, until it completes. After
// every kill nothing opens the data (the marker names both commands),
// and once finished the data is wholly the backup's, once undone wholly
// what it was: never a mix.
func TestRestoreKilledAtEveryStep(t *testing.T) {
	ctx := context.Background()
	src := newData(t, 64<<10)
	if err := os.WriteFile(filepath.Join(src, SecretFile), []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(t.TempDir(), "backup")
	if _, err := Take(ctx, Options{Data: src, To: from, Drivers: drivers}); err != nil {
		t.Fatal(err)
	}
	reference := filepath.Join(t.TempDir(), "reference")
	if _, release, err := Restore(ctx, RestoreOptions{From: from, Data: reference, Drivers: drivers, Lock: testLock}); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	want := tree(t, reference)
	if len(want) < 3 {
		t.Fatalf("the reference restore holds %v", want)
	}
	old := newData(t, 0)
	// A WAL file and an uploads directory of the old data go aside too.
	if err := os.WriteFile(filepath.Join(old, StoreFile+"-wal"), []byte("old wal"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(old, UploadsDir, "objects"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, UploadsDir, "objects", "x"), []byte("old upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "notes.txt"), []byte("the owner's"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(t, old)

	for _, force := range []bool{false, true} {
		target := func(t *testing.T) string {
			if !force {
				return filepath.Join(t.TempDir(), "new")
			}
			d := filepath.Join(t.TempDir(), "data")
			if err := os.CopyFS(d, os.DirFS(old)); err != nil {
				t.Fatal(err)
			}
			return d
		}
		var oldTree map[string]string
		if force {
			oldTree = before
		}
		for _, finish := range []string{"resume", "abort"} {
			for n := 1; ; n++ {
				data := target(t)
				var steps []string
				_, release, err := Restore(ctx, RestoreOptions{From: from, Data: data, Force: force, Drivers: drivers, Lock: testLock, Kill: killAt(n, &steps)})
				if err == nil {
					release()
					if got := tree(t, data); !equalSums(got, want) {
						t.Fatalf("force %v: the restore that was not killed left %v, want %v", force, got, want)
					}
					if n < 8 {
						t.Fatalf("force %v: a restore of %d steps (%v): the hook is not called", force, n-1, steps)
					}
					break
				}
				at := steps[len(steps)-1]
				if !errors.Is(err, ErrKilled) {
					t.Fatalf("force %v, killed after %q: %v", force, at, err)
				}
				var re *RestoringError
				if err := CheckNotRestoring(data); !errors.As(err, &re) ||
					!strings.Contains(err.Error(), "formd restore --resume --data "+data) || !strings.Contains(err.Error(), "formd restore --abort --data "+data) {
					t.Fatalf("force %v, killed after %q: the data is not refused as restoring: %v", force, at, err)
				}
				if _, err := Take(ctx, Options{Data: data, To: filepath.Join(t.TempDir(), "b"), Drivers: drivers}); !errors.As(err, &re) {
					t.Fatalf("force %v, killed after %q: a backup of the half-restored data: %v", force, at, err)
				}
				end, kills := settleAfterKill(t, ctx, data, finish)
				if end == "resume" {
					if got := tree(t, data); !equalSums(got, want) {
						t.Fatalf("force %v, killed after %q, resumed (%d kills): the data is %v, want the backup's %v", force, at, kills, got, want)
					}
				} else if got := tree(t, data); !equalSums(got, oldTree) {
					t.Fatalf("force %v, killed after %q, aborted (%d kills): the data is %v, want as it was %v", force, at, kills, got, oldTree)
				}
				if force {
					if raw, err := os.ReadFile(filepath.Join(data, "notes.txt")); err != nil || string(raw) != "the owner's" {
						t.Fatalf("force %v, killed after %q: the owner's file: %q %v", force, at, raw, err)
					}
				}
				if err := CheckNotRestoring(data); err != nil {
					t.Fatalf("force %v, killed after %q, %s: %v", force, at, end, err)
				}
				for _, d := range []string{filepath.Join(filepath.Dir(data), "."+filepath.Base(data)+".restore-new"), filepath.Join(filepath.Dir(data), "."+filepath.Base(data)+".restore-old")} {
					if _, err := os.Stat(d); err == nil {
						t.Fatalf("force %v, killed after %q, %s: %s is left", force, at, end, d)
					}
				}
			}
		}
	}
}

// settleAfterKill finishes (resume) or undoes (abort) a killed restore,
// itself killed too: the k-th run after its k-th step (a resume after its
// first, which only reads the marker), until one completes. An abort past the last move cannot undo and says
// to resume, which is then done. It says which completed, and after how
// many kills.
func settleAfterKill(t *testing.T, ctx context.Context, data, finish string) (string, int) {
	t.Helper()
	for kills := 0; kills < 100; kills++ {
		var steps []string
		var err error
		if finish == "resume" {
			var release func()
			_, release, err = Resume(ctx, RestoreOptions{Data: data, Drivers: drivers, Lock: testLock, Kill: killAt(kills+2, &steps)})
			if err == nil {
				release()
			}
		} else {
			err = Abort(RestoreOptions{Data: data, Drivers: drivers, Lock: testLock, Kill: killAt(kills+1, &steps)})
		}
		switch {
		case err == nil:
			return finish, kills
		case errors.Is(err, ErrKilled):
			continue
		case finish == "abort" && strings.Contains(err.Error(), "finish it with formd restore --resume"):
			finish = "resume"
		default:
			t.Fatalf("%s: %v", finish, err)
		}
	}
	t.Fatalf("%s did not complete in 100 runs", finish)
	return "", 0
}
