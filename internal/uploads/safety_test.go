package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// A photo sent over tus or in a plain post is kept without its
// coordinates, and the SHA-256 recorded is of the bytes kept.
func TestPhotosLoseTheirLocation(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	photo, err := os.ReadFile(filepath.Join("testdata", "gps-photo.jpg"))
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
	for _, id := range []string{id, posted} {
		kept, err := os.ReadFile(kept(r.dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(kept, photo) || exifHasGPS(t, kept) || bytes.Contains(kept, []byte("Shanghai")) {
			t.Fatalf("upload %s kept its location", id)
		}
		u, err := r.st.Upload(context.Background(), id)
		if err != nil || !u.Complete || u.SHA256 != sha256.Sum256(kept) || u.Size != int64(len(kept)) || u.Type != "image/jpeg" {
			t.Fatalf("upload %s recorded as %+v (%v); want the digest of the cleaned bytes", id, u, err)
		}
	}
	// The same post again is the same upload.
	again, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "p.jpg", "key-1", 0, bytes.NewReader(photo))
	if err != nil || again != posted {
		t.Fatalf("the same post again: %s %v, want %s", again, err, posted)
	}
}

// A submission acknowledged shortly before its upload's expiry is
// decided with its file, however late the processor comes to it: intake
// holds the upload (Check), and the expiry leaves it.
func TestCheckedUploadOutlivesItsExpiry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	loc := r.create("photo", 64)
	r.patch(loc, 0, png(64), false)
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	r.clock.add(23 * time.Hour)
	if errs, err := r.svc.Check(ctx, r.forms["exam"], []form.UploadRef{{Field: "photo", ID: id}}); err != nil || len(errs) != 0 {
		t.Fatalf("check: %v %v", errs, err)
	}
	// The processor is two hours behind: the first expiry has passed.
	r.clock.add(2 * time.Hour)
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d, %v: a held upload went", n, err)
	}
	e := journal.Entry{ID: "e1", Seq: 1, Site: "default", Form: "exam", Key: "k1", ReceivedAt: r.clock.Now(),
		Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
	if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
		t.Fatalf("the late decision: %+v %v", out, err)
	}
	// An upload that did expire is refused before anything is
	// acknowledged.
	gone := strings.TrimPrefix(r.create("photo", 64), "/v1/forms/exam/uploads/")
	r.patch("/v1/forms/exam/uploads/"+gone, 0, png(64), false)
	r.clock.add(25 * time.Hour)
	if _, err := r.svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	errs, err := r.svc.Check(ctx, r.forms["exam"], []form.UploadRef{{Field: "photo", ID: gone}})
	if err != nil || len(errs) != 1 || errs[0].Code != "upload-not-found" {
		t.Fatalf("check of an expired upload: %v %v", errs, err)
	}
}
