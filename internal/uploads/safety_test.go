package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/exif"
)

// A photo sent over tus or in a plain post is kept without its
// coordinates, and the SHA-256 recorded is of the bytes kept.
func TestPhotosLoseTheirLocation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	photo, err := os.ReadFile(filepath.Join("exif", "testdata", "gps-photo.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	loc := r.create("photo", len(photo))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	if res := r.patch(loc, 0, photo, false); res.StatusCode != 204 {
		t.Fatalf("PATCH: %d %s", res.StatusCode, problemCode(t, res))
	}
	posted, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "p.jpg", "key-1", 0, bytes.NewReader(photo))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{id, posted.ID} {
		kept, err := os.ReadFile(kept(r.dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept, scrubbed(t, photo)) || bytes.Contains(kept, []byte("Shanghai")) {
			t.Fatalf("upload %s kept its location", id)
		}
		sum := sha256.Sum256(kept)
		if id == posted.ID {
			// Recorded by its entry's decision, from these facts.
			if p := posted.Posted; p == nil || p.SHA256 != hex.EncodeToString(sum[:]) || p.Size != int64(len(kept)) || p.Type != "image/jpeg" {
				t.Fatalf("posted file %s carries %+v; want the digest of the cleaned bytes", id, p)
			}
			continue
		}
		u, err := r.st.Upload(context.Background(), id)
		if err != nil || !u.Complete || u.SHA256 != sum || u.Size != int64(len(kept)) || u.Type != "image/jpeg" {
			t.Fatalf("upload %s recorded as %+v (%v); want the digest of the cleaned bytes", id, u, err)
		}
	}
	// The same post again is the same upload.
	again, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "p.jpg", "key-1", 0, bytes.NewReader(photo))
	if err != nil || again.ID != posted.ID || again.Posted.SHA256 != posted.Posted.SHA256 {
		t.Fatalf("the same post again: %+v %v, want %+v", again, err, posted)
	}
}

// A submission acknowledged shortly before its upload's expiry is
// decided with its file, however late the processor comes to it: the
// expiry pass keeps every upload that had not expired when the oldest
// undecided entry was received (journal-first: nothing is held in the
// store before the journal). An upload that had expired when its entry
// was received is decided upload-not-found.
func TestCheckedUploadOutlivesItsExpiry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	_, id := r.photo(64)
	r.clock.add(23 * time.Hour)
	received := r.clock.Now()
	r.backlog.set(received) // journaled, not decided
	// The processor is two hours behind: the upload's expiry has passed.
	r.clock.add(2 * time.Hour)
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d, %v: an upload an undecided entry names went", n, err)
	}
	e := journal.Entry{ID: "e1", Seq: 1, Site: "default", Form: "exam", Key: "k1", ReceivedAt: received,
		Data:    []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`),
		Uploads: []journal.Upload{{ID: id, Field: "photo"}}}
	if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
		t.Fatalf("the late decision: %+v %v", out, err)
	}
	r.backlog.set(time.Time{})
	// An upload that had expired when its entry came is refused by the
	// decision, whether the pass deleted it yet or not.
	gone := strings.TrimPrefix(r.create("photo", 64), "/v1/forms/exam/uploads/")
	r.patch("/v1/forms/exam/uploads/"+gone, 0, png(64), false)
	r.clock.add(25 * time.Hour)
	if o := r.decide("k2", "exam", "photo", gone); o.Status != store.StatusUploadMissing || o.Detail != "upload-not-found:photo" {
		t.Fatalf("an expired upload, not deleted yet: %+v", o)
	}
	if _, err := r.svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if o := r.decide("k3", "exam", "photo", gone); o.Status != store.StatusUploadMissing || o.Detail != "upload-not-found:photo" {
		t.Fatalf("an expired upload, deleted: %+v", o)
	}
	// A journal whose backlog cannot be read stops the pass: it deletes
	// nothing.
	stale := strings.TrimPrefix(r.create("photo", 64), "/v1/forms/exam/uploads/")
	r.clock.add(25 * time.Hour)
	r.backlog.mu.Lock()
	r.backlog.err = errors.New("journal down")
	r.backlog.mu.Unlock()
	if n, err := r.svc.RunOnce(ctx); err == nil || n != 0 {
		t.Fatalf("a pass without the backlog: %d %v", n, err)
	}
	if _, err := r.st.Upload(ctx, stale); err != nil {
		t.Fatalf("an upload went while the backlog was unknown: %v", err)
	}
}

// scrubbed is the JPEG b as exif.ScrubLocation leaves it: the bytes the
// service must keep of that photo.
func scrubbed(t *testing.T, b []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "photo.jpg")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := exif.ScrubLocation(f, int64(len(b)), "image/jpeg"); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
