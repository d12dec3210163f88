package dirobjects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/formd/formd/internal/uploads/tier"
)

// kept is the path of upload id's bytes in the objects directory under
// the uploads directory dir (a path that does not exist when none).
func kept(dir, id string) string {
	d := DirAt(dir)
	sum, _ := d.linked(id)
	if sum == "" {
		sum = "none"
	}
	return filepath.Join(d.idDir(id), sum)
}

// writeFile writes b to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// someBytes is n bytes, alike for one n.
func someBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func nlink(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return LinkCount(fi)
}

// The same bytes kept for two uploads are one file whose link count
// counts them; deleting one upload keeps the other's bytes, deleting the
// last removes the file.
func TestDirKeepsContentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "uploads")
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	body := someBytes(5000)
	sum := sha256.Sum256(body)
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for _, id := range []string{a, b} {
		if err := d.Keep(ctx, id, writeFile(t, dir, id, body), int64(len(body)), sum); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, id)) // the caller removes the parts
	}
	if err := d.Keep(ctx, a, writeFile(t, dir, a, body), int64(len(body)), sum); err != nil {
		t.Fatalf("a second Keep of the same id and bytes: %v", err)
	}
	os.Remove(filepath.Join(dir, a))
	c := d.ContentPath(hex.EncodeToString(sum[:]))
	if n := nlink(t, c); n != 3 {
		t.Fatalf("the content file has %d links, want 3 (itself and two ids)", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ObjectsDir, "sha256", "*", "*"))
	if len(files) != 1 {
		t.Fatalf("content files %v, want one", files)
	}
	objectstest.WantPrivate(t, c, filepath.Dir(c), filepath.Join(dir, ObjectsDir), kept(dir, a), filepath.Dir(kept(dir, a)))
	if err := d.Keep(ctx, a, writeFile(t, dir, "other", someBytes(10)), 10, sha256.Sum256(someBytes(10))); err == nil {
		t.Fatal("an id kept again with other bytes is no error")
	}
	if err := d.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := objectstest.Read(t, d, b); !bytes.Equal(got, body) {
		t.Fatal("the other upload's bytes went with the first one's deletion")
	}
	if _, err := d.Open(ctx, a); !errors.Is(err, tier.ErrNoObject) {
		t.Fatalf("open a deleted upload: %v", err)
	}
	if err := d.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c); !os.IsNotExist(err) {
		t.Fatalf("the content file stays after its last upload's deletion: %v", err)
	}
	if err := d.Delete(ctx, b); err != nil {
		t.Fatalf("a second Delete: %v", err)
	}
}

// Two entries with the same photo, one forgotten while the other's upload
// is being kept: whatever the order, the other's bytes stay. Two Dir
// values on one directory stand for two processes (the flock orders
// them; each has its own mutex).
func TestDirKeepAndDeleteOfTheSameContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "uploads")
	d1, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The Keep waits, between finding the content there and linking to
	// it, for the Delete to have had its chance: without the locks it
	// would remove the content file in that gap.
	d1.betweenCheckAndLink = func() {
		for range 1000 {
			runtime.Gosched()
		}
	}
	body := someBytes(20000)
	sum := sha256.Sum256(body)
	for i := range 200 {
		forgotten, other := fmt.Sprintf("%032x", 2*i), fmt.Sprintf("%032x", 2*i+1)
		if err := d1.Keep(ctx, forgotten, writeFile(t, dir, forgotten, body), int64(len(body)), sum); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, forgotten)) // its parts go once it is kept
		parts := writeFile(t, dir, other, body)
		var wg sync.WaitGroup
		var kerr, derr error
		wg.Add(2)
		go func() { defer wg.Done(); kerr = d1.Keep(ctx, other, parts, int64(len(body)), sum) }()
		delDir := d1
		if i%2 == 1 {
			delDir = d2
		}
		go func() { defer wg.Done(); derr = delDir.Delete(ctx, forgotten) }()
		wg.Wait()
		if kerr != nil || derr != nil {
			t.Fatal(kerr, derr)
		}
		os.Remove(parts)
		if got := objectstest.Read(t, d2, other); !bytes.Equal(got, body) {
			t.Fatalf("round %d: the kept upload's bytes are gone or wrong", i)
		}
		if err := d2.Delete(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, ObjectsDir, "sha256", "*", "*")); len(files) != 0 {
		t.Fatalf("content files left after every upload was deleted: %v", files)
	}
}

// Uploads an earlier release completed (a file named by id and its tusd
// .info in the uploads directory) are moved into the objects at start;
// a stop at any point of it leaves every file readable, and starting
// again finishes.
func TestMigrateUploadsOfEarlierReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	photo, cv := someBytes(4000), []byte("%PDF-1.4 a CV")
	files := map[string][]byte{
		strings.Repeat("1", 32): photo, strings.Repeat("2", 32): photo, // one photo in two entries
		strings.Repeat("3", 32): cv,
		strings.Repeat("4", 32): photo[:1000], // still being received: stays in the parts
	}
	complete := map[string]bool{strings.Repeat("1", 32): true, strings.Repeat("2", 32): true, strings.Repeat("3", 32): true}
	for id, b := range files {
		writeFile(t, dir, id, b)
		writeFile(t, dir, id+".info", []byte(`{"ID":"`+id+`"}`))
	}
	sumOf := func(_ context.Context, id string) ([32]byte, bool, error) {
		return sha256.Sum256(files[id]), complete[id], nil
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A stop after the first upload was kept, before its old files went
	// (what a kill -9 in the middle leaves): both layouts at once.
	first := strings.Repeat("1", 32)
	if err := d.Keep(ctx, first, filepath.Join(dir, first), int64(len(photo)), sha256.Sum256(photo)); err != nil {
		t.Fatal(err)
	}
	for id := range complete {
		if got := objectstest.Read(t, d, id); !bytes.Equal(got, files[id]) {
			t.Fatalf("upload %s unreadable mid-migration", id)
		}
	}
	n, err := d.Migrate(ctx, sumOf)
	if err != nil || n != 2 {
		t.Fatalf("migrated %d, %v; want the two not kept yet", n, err)
	}
	if n, err := d.Migrate(ctx, sumOf); err != nil || n != 0 {
		t.Fatalf("a second migration moved %d, %v", n, err)
	}
	for id := range complete {
		if got := objectstest.Read(t, d, id); !bytes.Equal(got, files[id]) {
			t.Fatalf("upload %s differs after the migration", id)
		}
		for _, p := range []string{filepath.Join(dir, id), filepath.Join(dir, id+".info")} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("the old file %s stays", p)
			}
		}
	}
	partial := strings.Repeat("4", 32)
	if _, err := os.Stat(filepath.Join(dir, partial)); err != nil {
		t.Fatalf("an upload still being received was moved: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, ObjectsDir, "sha256", "*", "*")); len(files) != 2 {
		t.Fatalf("content files %v, want the photo and the CV", files)
	}
}

// BenchmarkDirKeep keeps a complete 10 MiB upload as a new content file
// (hard links, the fsyncs of the content's and the id's directories) and
// deletes it, the content file too (writing and fsyncing the received
// file, as tusd does, is not counted).
func BenchmarkDirKeep(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "uploads")
	d, err := OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	body := someBytes(10 << 20)
	sum := sha256.Sum256(body)
	b.SetBytes(int64(len(body)))
	for i := 0; b.Loop(); i++ {
		// As the service: the received file (a name of its own), kept,
		// its name removed; then the upload deleted, content and all.
		id := fmt.Sprintf("%032x", i)
		received := filepath.Join(dir, id)
		b.StopTimer()
		if err := os.WriteFile(received, body, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := syncPath(received); err != nil { // as tusd's parts are
			b.Fatal(err)
		}
		b.StartTimer()
		if err := d.Keep(ctx, id, received, int64(len(body)), sum); err != nil {
			b.Fatal(err)
		}
		os.Remove(received)
		if err := d.Delete(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// The directory tier passes the objects' conformance suite; its two
// instances are two Dirs on one uploads directory, as a server and a
// command line beside it are.
func TestDirConformance(t *testing.T) {
	t.Parallel()
	objectstest.Run(t, objectstest.Tier{
		Open: func(t *testing.T) (objectstest.Objects, objectstest.Objects) {
			dir := t.TempDir()
			a, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		},
		NotFound: tier.ErrNoObject,
	})
}
