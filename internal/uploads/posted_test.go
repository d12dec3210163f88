package uploads

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// A plain post's file is kept with no store call (DESIGN invariant 12):
// its entry's decision records and claims it. Bytes whose entry is never
// decided go at the expiry pass once expired before the oldest undecided
// entry; bytes an undecided entry names stay, however late its decision.
func TestPostedFileRecordedByItsDecision(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	put := func(key string) journal.Upload {
		t.Helper()
		u, err := r.svc.Put(ctx, r.forms["exam"], "photo", "p.png", key, 0, bytes.NewReader(png(64)))
		if err != nil || u.Posted == nil {
			t.Fatalf("Put %s: %+v %v", key, u, err)
		}
		if _, err := r.st.Upload(ctx, u.ID); err == nil {
			t.Fatalf("Put %s recorded upload %s in the store", key, u.ID)
		}
		return u
	}
	marked := func(id string) bool {
		_, err := os.Stat(filepath.Join(r.dir, PostedDir, id))
		return err == nil
	}
	decided := put("k1")
	if o := r.decideUpload("k1", "exam", decided, r.clock.Now()); o.Status != store.StatusStored {
		t.Fatalf("the post's decision: %+v", o)
	}
	if u, err := r.st.Upload(ctx, decided.ID); err != nil || !u.Complete || u.Size != decided.Posted.Size || u.Type != "image/png" {
		t.Fatalf("the decided post's upload: %+v %v", u, err)
	}
	// The same file named by another entry is another's: upload-used.
	if o := r.decideUpload("k1-again", "exam", decided, r.clock.Now()); o.Status != store.StatusUploadUsed {
		t.Fatalf("a posted file named twice: %+v", o)
	}
	never := put("k2") // refused after its files were read, or never journaled
	r.clock.add(25 * time.Hour)
	pending := put("k3")
	received := r.clock.Now()
	r.backlog.set(received) // its entry journaled, not decided
	r.clock.add(25 * time.Hour)
	if _, err := r.svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytesGone(r.dir, never.ID) || marked(never.ID) {
		t.Fatalf("the bytes of a post never decided are still there (mark %v)", marked(never.ID))
	}
	if bytesGone(r.dir, pending.ID) || !marked(pending.ID) {
		t.Fatal("the bytes an undecided entry names went")
	}
	if bytesGone(r.dir, decided.ID) || marked(decided.ID) {
		t.Fatalf("the decided post's bytes went, or its mark stayed (%v)", marked(decided.ID))
	}
	// Decided late, with its file.
	if o := r.decideUpload("k3", "exam", pending, received); o.Status != store.StatusStored {
		t.Fatalf("the late decision: %+v", o)
	}
	r.backlog.set(time.Time{})
	if _, err := r.svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if bytesGone(r.dir, pending.ID) || marked(pending.ID) {
		t.Fatal("a claimed posted file went, or its mark stayed")
	}
}
