package uploads

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// restart is the rig's service made again on the same directory and
// store, as after a restart of formd: no digest is running.
func (r *rig) restart(objs Objects) {
	r.t.Helper()
	svc, err := New(r.st, r.forms, Config{Dir: r.dir, Objects: objs, Expiry: 24 * time.Hour, Now: r.clock.Now})
	if err != nil {
		r.t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	srv := httptest.NewServer(mux)
	r.t.Cleanup(srv.Close)
	r.svc, r.srv = svc, srv
}

func readAll(t *testing.T, svc *Service, id string) []byte {
	t.Helper()
	o, err := svc.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The digest is taken while the bytes arrive; an upload resumed after a
// restart (no digest in memory) hashes what is on disk once and gets
// the same digest.
func TestDigestWhileReceivingAndAfterARestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	body := png(50 << 10)
	for _, restart := range []bool{false, true} {
		loc := r.create("photo", len(body))
		id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
		for off, step := 0, 7001; off < len(body); off += step {
			end := min(off+step, len(body))
			if restart && off > 0 && off < 3*step {
				r.restart(nil)
			}
			if res := r.patch(loc, off, body[off:end], false); res.StatusCode != 204 {
				t.Fatalf("PATCH at %d: %d %s", off, res.StatusCode, problemCode(t, res))
			}
		}
		u, err := r.st.Upload(context.Background(), id)
		if err != nil || !u.Complete || u.SHA256 != sha256.Sum256(body) || u.Type != "image/png" {
			t.Fatalf("restart %v: upload %+v %v", restart, u, err)
		}
		if _, ok := r.svc.files.sums.m[id]; ok {
			t.Fatal("the running digest outlives the upload")
		}
		// A complete upload is answered from the store: HEAD gives its
		// length, a PATCH at its end is a no-op, one elsewhere is 409.
		if res := r.do("HEAD", loc, nil, nil); res.StatusCode != 200 || res.Header.Get("Upload-Offset") != strconv.Itoa(len(body)) {
			t.Fatalf("HEAD of a complete upload: %d %q", res.StatusCode, res.Header.Get("Upload-Offset"))
		}
		if res := r.patch(loc, len(body), nil, true); res.StatusCode != 204 {
			t.Fatalf("PATCH at the end of a complete upload: %d", res.StatusCode)
		}
		if res := r.patch(loc, 10, body[10:20], false); res.StatusCode != 409 || !strings.HasPrefix(problemCode(t, res), "upload-offset-mismatch") {
			t.Fatalf("PATCH inside a complete upload: %d", res.StatusCode)
		}
	}
}

// bigForm takes files larger than the small file systems below.
const bigForm = `
id: exam
fields:
  - {name: photo, type: file, max_size: 8MiB, accept: [image/png]}
`

// smallDisk mounts a tmpfs of size bytes for the test (root only); the
// test is skipped where it cannot, and fails under
// FORMD_REQUIRE_SERVICES=1 (CI, which runs as root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0700")
	if err != nil {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatalf("mount a small tmpfs for the disk-full test (needs root): %v", err)
		}
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount the tmpfs: %v", err)
		}
	})
	return dir
}

func grow(t *testing.T, dir string, size int) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+strconv.Itoa(size), dir).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
}

func used(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// A disk without room: the PATCH is 507 with Retry-After and a stable
// code; the chunk is cut off again (the upload stands where it stood,
// the space is free again); nothing can be claimed; once there is room
// the client resumes from the offset HEAD gives and the bytes are whole.
// A plain post's file that does not fit leaves neither a file nor a
// record.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 1<<20)
	fs, err := form.Parse([]byte(bigForm), "")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t)
	r.forms["exam"] = fs[0]
	r.dir = filepath.Join(disk, "uploads")
	r.restart(nil)

	body := png(3 << 20)
	loc := r.create("photo", len(body))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	if res := r.patch(loc, 0, body[:256<<10], false); res.StatusCode != 204 {
		t.Fatalf("first chunk: %d", res.StatusCode)
	}
	before := used(t, disk)
	res := r.patch(loc, 256<<10, body[256<<10:], false)
	if res.StatusCode != http.StatusInsufficientStorage || res.Header.Get("Retry-After") == "" {
		t.Fatalf("PATCH past the disk's room: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if c := problemCode(t, res); !strings.HasPrefix(c, "upload-storage-full") {
		t.Fatalf("problem %q", c)
	}
	if res := r.do("HEAD", loc, nil, nil); res.Header.Get("Upload-Offset") != strconv.Itoa(256<<10) {
		t.Fatalf("after a full disk the offset is %q, want the one before the chunk", res.Header.Get("Upload-Offset"))
	}
	if after := used(t, disk); after > before {
		t.Fatalf("the refused chunk left %d bytes on the disk", after-before)
	}
	if o := r.decide("k1", fs[0].ID(), "photo", id); o.Status != store.StatusUploadMissing || o.Detail != "upload-incomplete:photo" {
		t.Fatalf("a submission naming it: %+v", o)
	}

	// A plain post's file: 507 as a problem, no file, no record.
	_, err = r.svc.Put(context.Background(), fs[0], "photo", "scan.png", "key-1", 0, strings.NewReader(string(body)))
	if !errors.Is(err, ErrStorageFull) {
		t.Fatalf("Put on a full disk: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(r.dir, ".part-*"))
	if len(left) != 0 {
		t.Fatalf("a refused post left %v", left)
	}

	grow(t, disk, 8<<20)
	if res := r.patch(loc, 256<<10, body[256<<10:], false); res.StatusCode != 204 {
		t.Fatalf("resumed PATCH: %d %s", res.StatusCode, problemCode(t, res))
	}
	u, err := r.st.Upload(context.Background(), id)
	if err != nil || !u.Complete || u.SHA256 != sha256.Sum256(body) {
		t.Fatalf("after the resume: %+v %v", u, err)
	}
	if got := readAll(t, r.svc, id); sha256.Sum256(got) != sha256.Sum256(body) {
		t.Fatal("the stored bytes are not the bytes sent")
	}
}
