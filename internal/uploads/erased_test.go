package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/links"
)

// uploadClaimed sends a complete photo and stores an entry that claims
// it; it returns the upload's and the entry's ids.
func (r *rig) uploadClaimed(seq uint64) (string, string) {
	r.t.Helper()
	_, id := r.photo(64)
	e := journal.Entry{ID: "e-" + id, Seq: seq, Site: "default", Form: "exam", Key: "k-" + id, ReceivedAt: r.clock.Now(),
		Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
	if out, err := r.st.Apply(context.Background(), []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
		r.t.Fatalf("apply: %+v %v", out, err)
	}
	return id, e.ID
}

// downloads serves the rig's signed links.
func (r *rig) downloads() (*links.Signer, *httptest.Server) {
	r.t.Helper()
	l := links.New([]byte("formd test secret, 32 bytes long"), "", time.Hour, r.clock.Now)
	mux := http.NewServeMux()
	r.svc.RegisterDownloads(mux, l)
	srv := httptest.NewServer(mux)
	r.t.Cleanup(srv.Close)
	return l, srv
}

func get(t *testing.T, srv *httptest.Server, link string) (int, string) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == 200 {
		return 200, ""
	}
	var p struct{ Code string }
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		t.Fatalf("a %d without a problem document: %v", res.StatusCode, err)
	}
	return res.StatusCode, p.Code
}

// Once an erasure commits, a link made before it (signed, not expired)
// answers 410 file-erased at once, while the bytes are still on the disk;
// the entry lists no files for new links; the next pass deletes the
// bytes, and the link then answers 404. Another entry's file is served
// throughout.
func TestErasedFilesAreNotServed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	l, srv := r.downloads()
	gone, goneEntry := r.uploadClaimed(1)
	kept, keptEntry := r.uploadClaimed(2)
	goneLink, keptLink := l.URL(goneEntry, gone), l.URL(keptEntry, kept)
	if code, _ := get(t, srv, goneLink); code != 200 {
		t.Fatalf("the file before the erasure: %d", code)
	}
	if n, err := r.st.EraseEntries(ctx, []string{goneEntry}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if bytesGone(r.dir, gone) {
		t.Fatal("the test needs the bytes still there before the pass")
	}
	if code, pc := get(t, srv, goneLink); code != http.StatusGone || pc != problem.CodeFileErased {
		t.Fatalf("an erased entry's file through a link made before: %d %s, want 410 %s", code, pc, problem.CodeFileErased)
	}
	if files, err := l.Files(ctx, r.st, goneEntry); err != nil || len(files) != 0 {
		t.Fatalf("an erased entry's files: %+v %v", files, err)
	}
	if code, _ := get(t, srv, keptLink); code != 200 {
		t.Fatalf("another entry's file after the erasure: %d", code)
	}
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("pass: %d %v; want the erased file deleted", n, err)
	}
	if !bytesGone(r.dir, gone) {
		t.Fatal("the erased entry's bytes stay after the pass")
	}
	if code, pc := get(t, srv, goneLink); code != http.StatusNotFound {
		t.Fatalf("an erased file after the pass: %d %s, want 404", code, pc)
	}
	if code, _ := get(t, srv, keptLink); code != 200 {
		t.Fatalf("another entry's file after the pass: %d", code)
	}
}

// failingObjects fails Delete for the ids in fail.
type failingObjects struct {
	Objects
	mu   sync.Mutex
	fail map[string]bool
}

func (f *failingObjects) Delete(ctx context.Context, id string) error {
	f.mu.Lock()
	fail := f.fail[id]
	f.mu.Unlock()
	if fail {
		return errors.New("the disk refused")
	}
	return f.Objects.Delete(ctx, id)
}

// A deletion of bytes that fails is recorded in the store (attempts, the
// error), reported by the audit, does not keep the other deletions of the
// pass from happening, and is done by a later pass once it can be.
func TestFailedDeletionIsRecordedAndRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	stuck, stuckEntry := r.uploadClaimed(1)
	other, otherEntry := r.uploadClaimed(2)
	fo := &failingObjects{Objects: r.svc.objs, fail: map[string]bool{stuck: true}}
	r.svc.objs = fo
	if _, err := r.st.EraseEntries(ctx, []string{stuckEntry, otherEntry}, nil); err != nil {
		t.Fatal(err)
	}
	n, err := r.svc.RunOnce(ctx)
	if err == nil || !strings.Contains(err.Error(), stuck) || n != 2 {
		t.Fatalf("pass with one failing deletion: %d %v; want both found and the failure named", n, err)
	}
	if !bytesGone(r.dir, other) || bytesGone(r.dir, stuck) {
		t.Fatalf("after the pass: other gone %v, stuck gone %v", bytesGone(r.dir, other), bytesGone(r.dir, stuck))
	}
	ds, err := r.st.PendingDeletions(ctx, 10)
	if err != nil || len(ds) != 1 || ds[0].ID != stuck || ds[0].Attempts != 1 || !strings.Contains(ds[0].LastError, "the disk refused") || !ds[0].TriedAt.Equal(r.clock.Now()) {
		t.Fatalf("the failed deletion as recorded: %+v %v", ds, err)
	}
	a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now())
	if err != nil || a.OK() || len(a.FailedDeletions) != 1 || a.FailedDeletions[0].ID != stuck || a.Deleting != 1 || len(a.Orphans) != 0 {
		t.Fatalf("audit with a failed deletion: %+v %v", a, err)
	}
	// Still failing: tried again, counted again.
	if _, err := r.svc.RunOnce(ctx); err == nil {
		t.Fatal("the second pass hid the failure")
	}
	if ds, _ := r.st.PendingDeletions(ctx, 10); len(ds) != 1 || ds[0].Attempts != 2 {
		t.Fatalf("after a second failure: %+v", ds)
	}
	fo.mu.Lock()
	fo.fail = nil
	fo.mu.Unlock()
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("pass once the disk works: %d %v (nothing new found, the queued deletion done)", n, err)
	}
	if !bytesGone(r.dir, stuck) {
		t.Fatal("the retried deletion left the bytes")
	}
	if ds, _ := r.st.PendingDeletions(ctx, 10); len(ds) != 0 {
		t.Fatalf("deletions left: %+v", ds)
	}
	if a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now()); err != nil || !a.OK() || a.Deleting != 0 {
		t.Fatalf("audit after the retry: %+v %v", a, err)
	}
}

// Expiry removes the record and queues the bytes' deletion in one
// transaction: a formd stopped right after it (here: the store call made,
// the bytes not touched) leaves no bytes that nothing knows of — the
// audit counts them as being deleted, not as orphans — and the next
// service's pass deletes them.
func TestExpirySurvivesAStopBetweenRecordAndBytes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	_, id := r.photo(64)
	r.clock.add(24*time.Hour + time.Second)
	if ok, err := r.st.ExpireUpload(ctx, id, r.clock.Now()); err != nil || !ok {
		t.Fatalf("expire the record: %v %v", ok, err)
	}
	if bytesGone(r.dir, id) {
		t.Fatal("the test needs the bytes left behind")
	}
	a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now())
	if err != nil || len(a.Orphans) != 0 || a.Deleting != 1 || !a.OK() {
		t.Fatalf("audit after the stop: %+v %v", a, err)
	}
	// The next start: a new service on the same store and directory.
	svc, err := New(r.st, r.forms, Config{Dir: r.dir, Expiry: 24 * time.Hour, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := svc.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("the next pass: %d %v (nothing new found, the queued deletion done)", n, err)
	}
	if !bytesGone(r.dir, id) {
		t.Fatal("the bytes stay after the next pass")
	}
}

// The same through the service: two entries claim uploads of one photo,
// one entry is forgotten; the other's file still downloads.
func TestForgetOneOfTwoEntriesWithTheSamePhoto(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	body := png(3000)
	var ids []string
	for i := range 2 {
		loc := r.create("photo", len(body))
		if res := r.patch(loc, 0, body, false); res.StatusCode != 204 {
			t.Fatalf("PATCH: %d", res.StatusCode)
		}
		id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
		ids = append(ids, id)
		e := journal.Entry{ID: fmt.Sprintf("e-%d", i), Seq: uint64(i + 1), Site: "default", Form: "exam", Key: "k-" + id, ReceivedAt: r.clock.Now(),
			Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
		if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
			t.Fatalf("apply: %+v %v", out, err)
		}
	}
	sum := sha256.Sum256(body)
	fi, err := os.Stat(dirobjects.DirAt(r.dir).ContentPath(hex.EncodeToString(sum[:])))
	if err != nil {
		t.Fatal(err)
	}
	if n := dirobjects.LinkCount(fi); n != 3 {
		t.Fatalf("the photo's content file has %d links, want 3", n)
	}
	if _, err := r.st.EraseEntries(ctx, []string{"e-0"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytesGone(r.dir, ids[0]) {
		t.Fatal("the forgotten entry's upload stays")
	}
	if got := readAll(t, r.svc, ids[1]); !bytes.Equal(got, body) {
		t.Fatal("the other entry's photo went with the forgotten one")
	}
	if a, err := AuditFiles(ctx, r.st, dirobjects.DirBytes(r.dir), time.Now()); err != nil || !a.OK() {
		t.Fatalf("audit: %+v %v", a, err)
	}
}
