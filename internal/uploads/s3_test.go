package uploads

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// cutProxy forwards TCP to target until cut, when it refuses and drops
// every connection: a bucket that cannot be reached.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// proxiedBucket is a client of the test's bucket through a cutProxy
// (whose cleanup closes the client's connections), and the bucket's
// location as --uploads names it.
func proxiedBucket(t *testing.T) (*s3objects.Bucket, *cutProxy, s3objects.Location) {
	t.Helper()
	loc := objectstest.S3Location(t)
	proxy := newCutProxy(t, loc.Endpoint)
	named := loc
	loc.Endpoint = proxy.ln.Addr().String()
	objs, err := s3objects.New(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	return objs, proxy, named
}

// With --uploads s3 a complete upload's bytes are in the bucket (no
// parts here), read back whole by Open; when the bucket cannot be
// reached the last PATCH is 503 with Retry-After, nothing is completed
// or claimable, and once the bucket is back the client goes on from the
// offset HEAD gives. Expiry and erasure delete the objects.
func TestS3Objects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	objs, proxy, _ := proxiedBucket(t)
	r := newRig(t)
	r.restart(objs)

	body := png(40 << 10)
	loc1 := r.create("photo", len(body))
	id := strings.TrimPrefix(loc1, "/v1/forms/exam/uploads/")
	if res := r.patch(loc1, 0, body, false); res.StatusCode != 204 {
		t.Fatalf("PATCH: %d %s", res.StatusCode, problemCode(t, res))
	}
	if _, err := os.Stat(filepath.Join(r.dir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the parts stay after the object is in the bucket: %v", err)
	}
	if got := readAll(t, r.svc, id); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("the object is not the bytes sent")
	}
	// Another instance (another service on its own directory) reads and
	// answers it too.
	other, err := New(r.st, r.forms, Config{Dir: filepath.Join(t.TempDir(), "uploads"), Objects: objs, Expiry: 24 * time.Hour, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, other, id); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("another instance reads other bytes")
	}

	// The bucket is cut off.
	body2 := png(30 << 10)
	loc2 := r.create("photo", len(body2))
	id2 := strings.TrimPrefix(loc2, "/v1/forms/exam/uploads/")
	if res := r.patch(loc2, 0, body2[:10000], false); res.StatusCode != 204 {
		t.Fatalf("first chunk: %d", res.StatusCode)
	}
	proxy.setCut(true)
	res := r.patch(loc2, 10000, body2[10000:], false)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("last PATCH with the bucket cut off: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if c := problemCode(t, res); !strings.HasPrefix(c, "upload-unavailable") {
		t.Fatalf("problem %q", c)
	}
	if u, err := r.st.Upload(ctx, id2); err != nil || u.Complete {
		t.Fatalf("an upload whose bytes are not in the bucket is complete: %+v %v", u, err)
	}
	if o := r.decide("k0", "exam", "photo", id2); o.Status != store.StatusUploadMissing || o.Detail != "upload-incomplete:photo" {
		t.Fatalf("a submission naming it while the bucket is cut off: %+v", o)
	}
	if _, err := r.svc.Open(ctx, id); problemOf(err) != "upload-unavailable" {
		t.Fatalf("a download while the bucket is cut off: %v", err)
	}
	proxy.setCut(false)
	// The parts are in the bucket too: what the refused PATCH sent was
	// not kept, HEAD gives the offset acknowledged before, and the rest
	// is sent again from there.
	if res := r.do("HEAD", loc2, nil, nil); res.StatusCode != 200 || res.Header.Get("Upload-Offset") != "10000" {
		t.Fatalf("HEAD after the bucket is back: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
	}
	if res := r.patch(loc2, 10000, body2[10000:], false); res.StatusCode != 204 {
		t.Fatalf("the last PATCH again: %d %s", res.StatusCode, problemCode(t, res))
	}
	if u, err := r.st.Upload(ctx, id2); err != nil || !u.Complete || u.SHA256 != sha256.Sum256(body2) {
		t.Fatalf("after the bucket is back: %+v %v", u, err)
	}

	// An entry claims the first; expiry deletes the other's object, and
	// the erasure of the entry's data (retention, forget) the first's.
	e := journal.Entry{ID: "e1", Seq: 1, Site: "default", Form: "exam", Key: "k1", ReceivedAt: r.clock.Now(),
		Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
	if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
		t.Fatalf("apply: %+v %v", out, err)
	}
	r.clock.add(25 * time.Hour)
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RunOnce: %d %v", n, err)
	}
	if _, err := r.svc.Open(ctx, id2); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("an expired upload's object: %v", err)
	}
	if got := readAll(t, r.svc, id); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("a claimed upload's object went with the expiry")
	}
	if n, err := r.st.EraseEntries(ctx, []string{e.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RunOnce after the erasure: %d %v", n, err)
	}
	if _, err := r.svc.Open(ctx, id); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("an erased entry's object: %v", err)
	}
}

func problemOf(err error) string {
	var c interface{ ProblemCode() string }
	if errors.As(err, &c) {
		return c.ProblemCode()
	}
	return ""
}

// The audit on a bucket: a claimed upload whose object is gone is
// missing, an object no record names is an orphan, named by its place.
func TestAuditFilesOnS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	idx, _, loc := proxiedBucket(t)
	objs := idx
	r := newRig(t)
	r.restart(objs)
	upload := func() string {
		l := r.create("photo", 64)
		if res := r.patch(l, 0, png(64), false); res.StatusCode != 204 {
			t.Fatalf("PATCH: %d", res.StatusCode)
		}
		return strings.TrimPrefix(l, "/v1/forms/exam/uploads/")
	}
	whole, lost := upload(), upload()
	var lostEntry string
	for i, id := range []string{whole, lost} {
		e := journal.Entry{ID: "e-" + id, Seq: uint64(i + 1), Site: "default", Form: "exam", Key: "k-" + id, ReceivedAt: r.clock.Now(),
			Data: []byte(`{"photo":"upload:` + id + `","_uploads":["` + id + `"]}`)}
		if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
			t.Fatalf("apply: %+v %v", out, err)
		}
		lostEntry = e.ID
	}
	if a, err := AuditFiles(ctx, r.st, idx, time.Now()); err != nil || !a.OK() || a.Claimed != 2 {
		t.Fatalf("audit of a whole bucket: %+v %v", a, err)
	}
	if err := objs.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(t.TempDir(), "stray")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := objs.Keep(ctx, "stray0123", stray, 1, sha256.Sum256([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	a, err := AuditFiles(ctx, r.st, idx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Missing) != 1 || a.Missing[0] != (MissingFile{Upload: lost, Entry: lostEntry}) || len(a.Orphans) != 1 || a.Orphans[0] != "stray0123" {
		t.Fatalf("audit %+v, want the lost file and the stray object", a)
	}
	if w := idx.Where("stray0123"); w != "s3://"+loc.Bucket+"/"+loc.Prefix+"stray0123" {
		t.Fatalf("orphan named %q", w)
	}
}
