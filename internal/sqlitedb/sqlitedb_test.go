package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// connection pool not closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func pragma[T any](t *testing.T, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, q string) T {
	t.Helper()
	var v T
	if err := db.QueryRowContext(ctxT(t), "PRAGMA "+q).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", q, err)
	}
	return v
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(ctxT(t), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// writerWithTable opens the writer of the file at path, closed when the
// test ends, and makes a table t (x) in it.
func writerWithTable(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	exec(t, db, "CREATE TABLE t (x)")
	return db
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestWriterSettings pins the writer's rules: WAL, every commit fsync'd
// (synchronous=FULL), a lock waited for, deleted content overwritten,
// checkpoints every 10,000 pages, one connection.
func TestWriterSettings(t *testing.T) {
	t.Parallel()
	db, err := OpenWriter(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		pragma string
		want   any
	}{
		{"journal_mode", "wal"},
		{"synchronous", int64(2)}, // FULL
		{"busy_timeout", int64(busyTimeout.Milliseconds())},
		{"secure_delete", int64(1)},
		{"wal_autocheckpoint", int64(10000)},
		{"cache_size", int64(-65536)},
	} {
		var got any
		if err := db.QueryRowContext(ctxT(t), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if s, ok := got.([]byte); ok {
			got = string(s)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("PRAGMA %s = %v, want %v", tc.pragma, got, tc.want)
		}
	}
	if n := db.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("the writer may open %d connections, want 1", n)
	}
}

// TestWriterBeginsImmediate: a transaction on the writer takes the write
// lock at BEGIN, so a second writer waits at its own BEGIN instead of
// failing half-way through (here, with no wait, it is refused at once).
func TestWriterBeginsImmediate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	a := writerWithTable(t, path)
	tx, err := a.BeginTx(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // only ends the test's transaction
	// The lock is held although tx has written nothing yet.
	other, err := sql.Open(driverName, "file:"+escapePath(path)+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.ExecContext(ctxT(t), "INSERT INTO t VALUES (1)")
	var se sqlite3.Error
	if !errors.As(err, &se) || se.Code != sqlite3.ErrBusy {
		t.Fatalf("a write beside an open transaction: %v, want SQLITE_BUSY", err)
	}
}

// TestFilesOwnerOnly: the database file and its WAL and shared-memory
// files are readable by their owner only, however they were before.
func TestFilesOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	for _, p := range []string{path, path + "-wal"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	db := writerWithTable(t, path)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if m := mode(t, p); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), m)
		}
	}
	db.Close()
}

// TestSharedWriter: one transaction on the shared writer writes both
// files; the attached one has the writer's settings.
func TestSharedWriter(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jpath, spath := filepath.Join(dir, "journal.db"), filepath.Join(dir, "store.db")
	w, err := OpenShared(jpath, spath)
	if err != nil {
		t.Fatal(err)
	}
	if got := pragma[string](t, w, SharedSchema+".journal_mode"); got != "wal" {
		t.Errorf("%s.journal_mode %q, want wal", SharedSchema, got)
	}
	if got := pragma[int](t, w, SharedSchema+".synchronous"); got != 2 {
		t.Errorf("%s.synchronous %d, want 2 (FULL)", SharedSchema, got)
	}
	exec(t, w, "CREATE TABLE journal_t (x)")
	exec(t, w, "CREATE TABLE "+SharedSchema+".store_t (x)")
	tx, err := w.BeginTx(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO journal_t VALUES (1)", "INSERT INTO store_t VALUES (1)"} {
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for path, table := range map[string]string{jpath: "journal_t", spath: "store_t"} {
		r, err := OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := r.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %d rows, %v; want the one the shared transaction wrote", filepath.Base(path), n, err)
		}
		r.Close()
		if m := mode(t, path); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(path), m)
		}
	}
}

// TestPathsWithURICharacters: a data directory whose name has ?, # or %
// opens the file it names, not a file cut at that character.
func TestPathsWithURICharacters(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "w.db")
	db := writerWithTable(t, path)
	db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file is not where its path says: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("files beside the directory: %v, want none", entries)
	}
}

// TestReadersCannotWrite: the read pool and the read-only connection
// refuse writes; the read-only one does not create a missing file.
func TestReadersCannotWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	writerWithTable(t, path)
	r, err := OpenReader(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Exec("INSERT INTO t VALUES (1)"); err == nil {
		t.Error("the read pool wrote")
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Exec("INSERT INTO t VALUES (1)"); err == nil {
		t.Error("the read-only connection wrote")
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	m, err := OpenReadOnly(missing)
	if err == nil {
		err = m.Ping()
		m.Close()
	}
	if err == nil {
		t.Error("a missing file opened read-only")
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a missing file read-only made it: %v", err)
	}
}

// TestTruncate: the WAL is emptied; a reader on an old snapshot keeps it
// from finishing, which is ErrCheckpointBusy after the tries.
func TestTruncate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "w.db")
	w := writerWithTable(t, path)
	exec(t, w, "INSERT INTO t VALUES (randomblob(100000))")
	if err := Checkpoint(ctxT(t), w, "main"); err != nil {
		t.Fatal(err)
	}
	if err := Truncate(ctxT(t), w, "main"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("WAL after Truncate: %v, %v; want empty", fi, err)
	}

	r, err := OpenReader(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rtx, err := r.BeginTx(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Rollback() //nolint:errcheck // only ends the reader's snapshot
	var n int
	if err := rtx.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	exec(t, w, "INSERT INTO t VALUES (randomblob(100000))")
	// Each try waits for readers truncateWait, not the busy timeout: at
	// 10 s a try the tries would outlast ctxT's 30 s.
	err = Truncate(ctxT(t), w, "main")
	if !errors.Is(err, ErrCheckpointBusy) {
		t.Fatalf("Truncate beside a reader's snapshot: %v, want ErrCheckpointBusy", err)
	}
	// The writer is free again, with its own busy timeout back.
	if got := pragma[int](t, w, "busy_timeout"); got != int(busyTimeout.Milliseconds()) {
		t.Errorf("busy_timeout after Truncate %d, want %d", got, busyTimeout.Milliseconds())
	}
}

// TestCopy: a copy is one file (no WAL beside it) with every committed
// row, sound by IntegrityCheck, and the source's writer goes on meanwhile.
func TestCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	w := writerWithTable(t, src)
	for i := range 50 {
		exec(t, w, "INSERT INTO t VALUES (?)", i)
	}
	if err := Copy(ctxT(t), src, dst); err != nil {
		t.Fatal(err)
	}
	exec(t, w, "INSERT INTO t VALUES (50)") // the source is not held
	if _, err := os.Stat(dst + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a WAL beside the copy: %v", err)
	}
	problems, err := IntegrityCheck(ctxT(t), dst)
	if err != nil || len(problems) != 0 {
		t.Fatalf("integrity of the copy: %v %v", problems, err)
	}
	db, err := OpenImmutable(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 50 {
		t.Fatalf("the copy has %d rows (%v), want the 50 committed before it", n, err)
	}
	if err := Copy(ctxT(t), filepath.Join(dir, "none.db"), filepath.Join(dir, "x.db")); err == nil {
		t.Error("a copy of a missing file")
	}
	if _, err := OpenImmutable(filepath.Join(dir, "none.db")); err == nil {
		t.Error("a missing file opened immutable")
	}
}

func TestIsFull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("append: %w", sqlite3.Error{Code: sqlite3.ErrFull}), true},
		{sqlite3.Error{Code: sqlite3.ErrBusy}, false},
		{errors.New("database or disk is full"), false},
		{nil, false},
	} {
		if got := IsFull(tc.err); got != tc.want {
			t.Errorf("IsFull(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
