package uploads

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// eicar is the EICAR anti-virus test file: harmless, and every scanner
// is to report it. It is put together here so that this source file is
// not itself reported.
var eicar = []byte(`X5O!P%@AP[4\PZX54(P^)7CC)7}$` + `EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`)

// clamdForTest is a running clamd: FORMD_TEST_CLAMD names either a
// socket (unix:///…, tcp://…, or a socket's path) of a clamd with a
// database that knows EICAR, or the clamd binary, which is then started
// on a socket of its own with a database of one signature (the EICAR
// file's MD5, an .hdb file), since there may be no network for
// freshclam. Unset: the test is skipped, unless FORMD_REQUIRE_SERVICES=1.
func clamdForTest(t *testing.T) *Clamd {
	t.Helper()
	v := os.Getenv("FORMD_TEST_CLAMD")
	if v == "" {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_TEST_CLAMD is not set and FORMD_REQUIRE_SERVICES=1: set it to clamd's binary (/usr/sbin/clamd, Debian's clamav-daemon) or socket")
		}
		t.Skip("FORMD_TEST_CLAMD not set (clamd's binary or socket)")
	}
	if strings.Contains(v, "://") {
		c, err := ParseClamd(v)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if st, err := os.Stat(v); err == nil && st.Mode()&os.ModeSocket != 0 {
		return &Clamd{network: "unix", address: v, Timeout: time.Minute}
	}
	return startClamd(t, v)
}

// startClamd runs the clamd binary in the foreground on a temporary
// socket, configuration and database, until the test ends.
func startClamd(t *testing.T, bin string) *Clamd {
	t.Helper()
	dir, err := os.MkdirTemp("", "formd-clamd-") // short: a socket's path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db := filepath.Join(dir, "db")
	if err := os.Mkdir(db, 0o755); err != nil {
		t.Fatal(err)
	}
	sig := fmt.Sprintf("%x:%d:Formd.Test.EICAR\n", md5sum(eicar), len(eicar))
	if err := os.WriteFile(filepath.Join(db, "formd.hdb"), []byte(sig), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "clamd.sock")
	conf := fmt.Sprintf("DatabaseDirectory %s\nLocalSocket %s\nForeground yes\nLogFile %s\nPidFile %s\nTemporaryDirectory %s\n",
		db, sock, filepath.Join(dir, "clamd.log"), filepath.Join(dir, "clamd.pid"), dir)
	if os.Geteuid() == 0 {
		conf += "User root\n" // clamd drops to the clamav user otherwise, who cannot read a root-owned temp dir
	}
	if err := os.WriteFile(filepath.Join(dir, "clamd.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+filepath.Join(dir, "clamd.conf"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start clamd: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	c := &Clamd{network: "unix", address: sock, Timeout: time.Minute}
	poll.UntilNil(t, "clamd to answer on "+sock, 90*time.Second, func() error {
		select {
		case err := <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "clamd.log"))
			t.Fatalf("clamd exited: %v\n%s\n%s", err, out.Bytes(), log)
		default:
		}
		_, err := c.Scan(context.Background(), strings.NewReader("ping"))
		return err
	})
	return c
}

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
	fs, err := form.Parse([]byte(scanForm), "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(t.TempDir(), "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &clock{now: time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "uploads")
	f := forms{"exam": fs[0]}
	svc, err := New(st, f, Config{Dir: dir, Expiry: 24 * time.Hour, Now: c.Now, Scanner: sc,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rig{t: t, svc: svc, st: st, srv: srv, clock: c, dir: dir, forms: f}
}

// downClamd is a clamd address nothing listens on: a real failed
// connection, not a fake scanner.
func downClamd(t *testing.T) *Clamd {
	return &Clamd{network: "unix", address: filepath.Join(t.TempDir(), "no-clamd.sock"), Timeout: time.Second}
}

func TestParseClamd(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"unix:///run/clamav/clamd.ctl": "unix:///run/clamav/clamd.ctl",
		"tcp://127.0.0.1:3310":         "tcp://127.0.0.1:3310",
	} {
		c, err := ParseClamd(v)
		if err != nil || c.String() != want {
			t.Errorf("ParseClamd(%q) = %v, %v", v, c, err)
		}
	}
	for _, v := range []string{"", "/run/clamav/clamd.ctl", "unix://run/clamd.ctl", "tcp://127.0.0.1", "http://x:1", "tcp://h:1/x"} {
		if _, err := ParseClamd(v); err == nil {
			t.Errorf("ParseClamd(%q) accepted", v)
		}
	}
}

// While clamd is down an upload's bytes stay but it is not complete, so
// no decision can claim it; the submission is 503 scan-unavailable with
// Retry-After. Once clamd answers, the same submission passes.
func TestScannerDownUploadWaits(t *testing.T) {
	t.Parallel()
	sw := &switchScanner{s: downClamd(t)}
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
	sw.set(clamdForTest(t))
	// The client sends the last chunk again once clamd is back.
	if res := r.patch(loc, len(body), nil, false); res.StatusCode != 204 {
		t.Fatalf("the last PATCH once clamd is back: %d %s", res.StatusCode, problemCode(t, res))
	}
	if u, _ := r.st.Upload(context.Background(), id); !u.Complete {
		t.Fatal("not complete after a clean scan")
	}
}

// With a real clamd: the EICAR file is 422 file-infected and deleted,
// over tus and in a plain HTML post; a clean file passes.
func TestClamdFindsEICAR(t *testing.T) {
	t.Parallel()
	c := clamdForTest(t)
	found, err := c.Scan(context.Background(), bytes.NewReader(eicar))
	if err != nil || !strings.Contains(found, "EICAR") && !strings.Contains(found, "Eicar") {
		t.Fatalf("clamd on EICAR: %q %v", found, err)
	}
	if found, err := c.Scan(context.Background(), strings.NewReader("hello, a clean file\n")); err != nil || found != "" {
		t.Fatalf("clamd on a clean file: %q %v", found, err)
	}
	// A stream of several INSTREAM chunks.
	big := bytes.Repeat([]byte("clean bytes "), 3*clamdChunk/12+5)
	if found, err := c.Scan(context.Background(), bytes.NewReader(big)); err != nil || found != "" {
		t.Fatalf("clamd on a long clean stream: %q %v", found, err)
	}

	r := newScanRig(t, c)
	loc := r.create("photo", len(eicar))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	res := r.patch(loc, 0, eicar, false)
	if res.StatusCode != 422 || !strings.HasPrefix(problemCode(t, res), problem.CodeFileInfected) {
		t.Fatalf("EICAR over tus: %d", res.StatusCode)
	}
	if _, err := r.st.Upload(context.Background(), id); !errors.Is(err, store.ErrUploadNotFound) {
		t.Fatalf("an infected upload's record stays: %v", err)
	}
	if !bytesGone(r.dir, id) {
		t.Fatalf("an infected upload's bytes stay")
	}
	_, err = r.svc.Put(context.Background(), r.forms["exam"], "photo", "cv.txt", "key-1", 0, bytes.NewReader(eicar))
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

func md5sum(b []byte) [16]byte { return md5.Sum(b) }
