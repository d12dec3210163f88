package uploads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/clamd"
	"github.com/formd/formd/internal/uploads/clamd/clamdtest"
)

// The ClamAV daemon is a Scanner.
var _ Scanner = (*clamd.Clamd)(nil)

// scanForm takes any file, so that the EICAR text reaches the scanner.
const scanForm = `
id: exam
fields:
  - {name: photo, type: file, max_size: 64KiB}
`

// switchScanner is a scanner that can be swapped mid-test (clamd down,
// then up).
type switchScanner struct {
	mu sync.Mutex
	s  Scanner
}

func (w *switchScanner) set(s Scanner) { w.mu.Lock(); w.s = s; w.mu.Unlock() }
func (w *switchScanner) Scan(ctx context.Context, r io.Reader) (string, error) {
	w.mu.Lock()
	s := w.s
	w.mu.Unlock()
	return s.Scan(ctx, r)
}

func newScanRig(t *testing.T, sc Scanner) *rig {
	t.Helper()
	return newRigWith(t, scanForm, func(c *Config) {
		c.Scanner, c.Logger = sc, slog.New(slog.NewTextHandler(io.Discard, nil))
	})
}

// While clamd is down an upload's bytes stay but it is not complete, so
// no decision can claim it; the submission is 503 scan-unavailable with
// Retry-After. Once clamd answers, the same submission passes.
func TestScannerDownUploadWaits(t *testing.T) {
	t.Parallel()
	sw := &switchScanner{s: clamdtest.Down(t)}
	r := newScanRig(t, sw)
	body := []byte("a clean CV, in plain text\n")
	loc := r.create("photo", len(body))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	res := r.patch(loc, 0, body, false)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || !strings.HasPrefix(problemCode(t, res), problem.CodeScanUnavailable) {
		t.Fatalf("last PATCH with clamd down: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if u, err := r.st.Upload(context.Background(), id); err != nil || u.Complete {
		t.Fatalf("an unscanned upload is complete (claimable): %+v %v", u, err)
	}
	// A decision cannot claim it.
	e := journal.Entry{ID: "e1", Seq: 1, Site: "default", Form: "exam", Key: "k1", ReceivedAt: r.clock.Now(),
		Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
	if out, err := r.st.Apply(context.Background(), []journal.Entry{e}); err != nil || out[0].Status != store.StatusUploadMissing {
		t.Fatalf("deciding an entry naming an unscanned upload: %+v %v", out, err)
	}
	if c := os.Getenv("FORMD_TEST_CLAMD"); c == "" {
		return // the rest needs a clamd that answers
	}
	sw.set(clamdtest.Running(t))
	// The client sends the last chunk again once clamd is back.
	if res := r.patch(loc, len(body), nil, false); res.StatusCode != 204 {
		t.Fatalf("the last PATCH once clamd is back: %d %s", res.StatusCode, problemCode(t, res))
	}
	if u, _ := r.st.Upload(context.Background(), id); !u.Complete {
		t.Fatal("not complete after a clean scan")
	}
}

// With a real clamd: the EICAR file is 422 file-infected and deleted,
// over tus and in a plain HTML post; a clean file passes. What clamd
// itself answers is tested in package clamd.
func TestClamdFindsEICAR(t *testing.T) {
	t.Parallel()
	c := clamdtest.Running(t)
	r := newScanRig(t, c)
	loc := r.create("photo", len(clamdtest.EICAR))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	res := r.patch(loc, 0, clamdtest.EICAR, false)
	if res.StatusCode != 422 || !strings.HasPrefix(problemCode(t, res), problem.CodeFileInfected) {
		t.Fatalf("EICAR over tus: %d", res.StatusCode)
	}
	if _, err := r.st.Upload(context.Background(), id); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("an infected upload's record stays: %v", err)
	}
	if !bytesGone(r.dir, id) {
		t.Fatalf("an infected upload's bytes stay")
	}
	_, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "cv.txt", "key-1", 0, bytes.NewReader(clamdtest.EICAR))
	if p := problem.From(err); p.Code != problem.CodeFileInfected {
		t.Fatalf("EICAR in a plain post: %v", err)
	}
	clean := []byte("a clean CV\n")
	loc = r.create("photo", len(clean))
	if res := r.patch(loc, 0, clean, false); res.StatusCode != 204 {
		t.Fatalf("a clean file over tus: %d %s", res.StatusCode, problemCode(t, res))
	}
	if _, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "cv.txt", "key-2", 0, bytes.NewReader(clean)); err != nil {
		t.Fatalf("a clean file in a plain post: %v", err)
	}
}
