package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
)

func TestAuditFiles(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	upload := func() string {
		_, id := r.photo(64)
		return id
	}
	claim := func(seq uint64, id string) string {
		e := journal.Entry{ID: "e-" + id, Seq: seq, Site: "default", Form: "exam", Key: "k-" + id, ReceivedAt: r.clock.Now(),
			Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
		if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
			t.Fatalf("apply: %+v %v", out, err)
		}
		return e.ID
	}
	whole, lost, live := upload(), upload(), upload()
	claim(1, whole)
	lostEntry := claim(2, lost)
	if err := os.RemoveAll(filepath.Dir(kept(r.dir, lost))); err != nil {
		t.Fatal(err)
	}
	_ = live // unclaimed, within its expiry: referenced
	clean, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(clean.Missing) != 1 || clean.Missing[0] != (MissingFile{Upload: lost, Entry: lostEntry}) || len(clean.Orphans) != 0 || clean.Uploads != 3 || clean.Claimed != 2 {
		t.Fatalf("audit %+v, want the lost file only", clean)
	}
	// Bytes nobody references: a file left by a deletion cut short, a
	// tusd .info without its upload, a plain post's temporary file from
	// hours ago (one being written now is not reported).
	stray := strings.Repeat("ab", 16)
	for _, name := range []string{stray, "0123.info", ".part-old", ".part-now"} {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(r.dir, ".part-old"), old, old)
	a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".part-old", "0123.info", stray}; !slices.Equal(a.Orphans, want) || a.OK() {
		t.Fatalf("orphans %v, want %v", a.Orphans, want)
	}
	// Once an erased entry's file is gone its claim is not a missing
	// file.
	if _, err := r.st.EraseEntries(ctx, []string{lostEntry}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range a.Orphans {
		os.Remove(filepath.Join(r.dir, name))
	}
	if a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now()); err != nil || !a.OK() {
		t.Fatalf("audit after the erasure: %+v %v", a, err)
	}
}

// The audit goes through the content files too: one whose bytes no
// longer hash to its name (a byte changed on the disk) is damaged, one
// no upload links to is reported; a temporary file being written now is
// not.
func TestAuditContents(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	_, id := r.photo(64)
	if a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now()); err != nil || !a.OK() {
		t.Fatalf("audit of a whole directory: %+v %v", a, err)
	}
	// One byte of the photo changes on the disk.
	p := kept(r.dir, id)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 0x01
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A content file whose id link a deletion cut short removed, and a
	// write in progress.
	d, err := dirobjects.OpenDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	cv := []byte("%PDF-1.4 left behind")
	sum := sha256.Sum256(cv)
	name := hex.EncodeToString(sum[:])
	src := filepath.Join(t.TempDir(), "cv")
	os.WriteFile(src, cv, 0o600)
	cut := strings.Repeat("c", 32)
	if err := d.Keep(ctx, cut, src, int64(len(cv)), sum); err != nil {
		t.Fatal(err)
	}
	os.Remove(src)
	if err := os.RemoveAll(filepath.Dir(kept(r.dir, cut))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(d.ContentPath(name)), ".tmp-now"), cv, 0o600)
	a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ps := sha256.Sum256(png(64))
	damaged := filepath.Join(dirobjects.ObjectsDir, "sha256", hex.EncodeToString(ps[:1]), hex.EncodeToString(ps[:]))
	unlinked := filepath.Join(dirobjects.ObjectsDir, "sha256", name[:2], name)
	if a.OK() || !slices.Equal(a.Damaged, []string{damaged}) || !slices.Equal(a.Unlinked, []string{unlinked}) || len(a.Missing) != 0 || len(a.Orphans) != 0 {
		t.Fatalf("audit %+v, want %s damaged and %s unlinked", a, damaged, unlinked)
	}
}
