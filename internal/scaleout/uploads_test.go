package scaleout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/jackc/pgx/v5"
)

const filesForm = `id: files
site: loadtest
title: Upload test
fields:
  - {name: name,  type: text, required: true}
  - {name: scan,  type: file, required: true, max_size: 8MiB, accept: [application/pdf]}
`

// pdf is n bytes that sniff as a PDF, different for each seed.
func pdf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	copy(b, "%PDF-1.4\n")
	return b
}

// tusUpload sends body to base as a tus upload of the form's scan field,
// in chunks, and returns the upload's address.
func tusUpload(t *testing.T, base, form string, body []byte, chunk int) string {
	t.Helper()
	loc := tusCreate(t, base, form, len(body), "扫描件.pdf")
	for off := 0; off < len(body); off += chunk {
		end := min(off+chunk, len(body))
		req, _ := http.NewRequest("PATCH", base+loc, bytes.NewReader(body[off:end]))
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Offset", strconv.Itoa(off))
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 204 {
			t.Fatalf("PATCH at %d: %d %s", off, res.StatusCode, b)
		}
	}
	return loc
}

// submit posts a submission naming the upload and waits for its decision.
func submit(t *testing.T, base, form, key string, data map[string]any) (int, string) {
	t.Helper()
	body, _ := json.Marshal(data)
	req, _ := http.NewRequest("POST", base+"/v1/forms/"+form+"/submissions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Prefer", "wait=10")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc struct{ Status, Code string }
	_ = json.Unmarshal(b, &doc)
	return res.StatusCode, doc.Status + doc.Code
}

// adminToken makes a new admin token in the shared store.
func adminToken(t *testing.T, storeURL string) string {
	t.Helper()
	cmd := exec.Command(formdBinary(t), "token", "--store", storeURL, "--data", filepath.Join(t.TempDir(), "data"))
	cmd.Env = append(os.Environ(), "FORMD_CONFIG=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("formd token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// fileLinks are the signed links of every file in a JSONL export.
func fileLinks(t *testing.T, base, form, token string) map[string]string {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/v1/admin/forms/"+form+"/export?format=jsonl", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("export: %d %s", res.StatusCode, raw)
	}
	links := map[string]string{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if sum, ok := v["sha256"].(string); ok {
				links[sum], _ = v["url"].(string)
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var row any
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		walk(row)
	}
	return links
}

func download(t *testing.T, base, link string) [32]byte {
	t.Helper()
	res, err := http.Get(base + link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("download %s: %d %s", link, res.StatusCode, b)
	}
	h := sha256.New()
	if _, err := io.Copy(h, res.Body); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// Three instances on NATS and PostgreSQL keep uploads in one S3 bucket
// (a real S3-compatible server): a file uploaded through the first, the
// submission naming it sent through the second, its signed link from the
// third's export downloads the same bytes from any instance; the first
// instance keeps no copy; a second submission naming the upload through
// the third is refused.
func TestUploadsAcrossInstancesOnS3(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	bucket := objectstest.S3URL(t)
	d := newDeploymentOf(t, nurl, storeURL, filesForm, "--uploads", bucket)
	a, b, c := d.start(t, "formd-a"), d.start(t, "formd-b"), d.start(t, "formd-c")

	sent := map[[32]byte]string{}
	for i := range 3 {
		body := pdf(1<<20+i*12345, byte(i))
		loc := tusUpload(t, a.url(), "files", body, 300<<10)
		id := loc[strings.LastIndex(loc, "/")+1:]
		sent[sha256.Sum256(body)] = id
		// Any instance answers where a complete upload stands.
		req, _ := http.NewRequest("HEAD", c.url()+loc, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Upload-Offset") != strconv.Itoa(len(body)) {
			t.Fatalf("HEAD through another instance: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
		}
		if code, status := submit(t, b.url(), "files", fmt.Sprintf("s3-%d", i), map[string]any{"name": fmt.Sprint("person ", i), "scan": "upload:" + id}); code != 201 || status != "stored" {
			t.Fatalf("submission %d through B: %d %s", i, code, status)
		}
		if code, status := submit(t, c.url(), "files", fmt.Sprintf("s3-other-%d", i), map[string]any{"name": "someone else", "scan": "upload:" + id}); code != 422 || !strings.Contains(status, "upload") {
			t.Fatalf("another submission naming upload %d through C: %d %s", i, code, status)
		}
		if _, err := os.Stat(filepath.Join(a.dataDir(), "uploads", id)); !os.IsNotExist(err) {
			t.Fatalf("instance A keeps a copy of upload %s: %v", id, err)
		}
	}

	links := fileLinks(t, c.url(), "files", adminToken(t, storeURL))
	if len(links) != len(sent) {
		t.Fatalf("the export links %d files, want %d: %v", len(links), len(sent), links)
	}
	for sum := range sent {
		link := links[hex.EncodeToString(sum[:])]
		if link == "" {
			t.Fatalf("no link for a file sent (sha256 %x)", sum)
		}
		for _, in := range []*instance{c, a, b} {
			if got := download(t, in.url(), link); got != sum {
				t.Fatalf("%s serves other bytes for %s", in.name, link)
			}
		}
	}
}

// tus sends one tus request to base+loc and returns the answer's status
// and Upload-Offset.
func tus(t *testing.T, method, url string, offset int, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if method == "PATCH" {
		req.Header.Set("Upload-Offset", strconv.Itoa(offset))
		req.Header.Set("Content-Type", "application/offset+octet-stream")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, ""
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Upload-Offset")
}

// tusCreate makes an upload of n bytes of the form's scan field through
// base, named filename unless that is empty, and returns its address.
func tusCreate(t *testing.T, base, form string, n int, filename string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/forms/"+form+"/uploads", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(n))
	meta := "field " + base64.StdEncoding.EncodeToString([]byte("scan"))
	if filename != "" {
		meta += ",filename " + base64.StdEncoding.EncodeToString([]byte(filename))
	}
	req.Header.Set("Upload-Metadata", meta)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create an upload: %d", res.StatusCode)
	}
	return res.Header.Get("Location")
}

// An upload continues on whichever instance a request reaches (a load
// balancer without sticky sessions, a phone that reconnects): the parts
// are in the bucket. Created through A, the first half sent through B,
// C's HEAD gives that offset and C takes the rest, the submission goes
// through A and B serves the same bytes. Two instances writing the same
// upload at once: the upload's lock (PostgreSQL advisory) lets one write
// at a time — B's PATCH asks A's to stop; A keeps what it had received
// and B finds the offset moved (409; 423 had A not let go), or, asked
// before it read a byte, A stops at once and B writes — and the bytes
// kept are one writer's alone, never interleaved.
func TestUploadResumesOnAnyInstance(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	bucket := objectstest.S3URL(t)
	d := newDeploymentOf(t, nurl, storeURL, filesForm, "--uploads", bucket)
	a, b, c := d.start(t, "formd-a"), d.start(t, "formd-b"), d.start(t, "formd-c")
	token := adminToken(t, storeURL)

	// 7 MiB: the first half is short of a part (the .part object in the
	// bucket), which the rest takes along into the last part.
	body := pdf(7<<20+4321, 1)
	half := 3<<20 + 17
	loc := tusCreate(t, a.url(), "files", len(body), "")
	if code, off := tus(t, "PATCH", b.url()+loc, 0, bytes.NewReader(body[:half])); code != 204 || off != strconv.Itoa(half) {
		t.Fatalf("first half through B: %d offset %q", code, off)
	}
	if code, off := tus(t, "HEAD", c.url()+loc, 0, nil); code != 200 || off != strconv.Itoa(half) {
		t.Fatalf("HEAD through C: %d offset %q, want %d", code, off, half)
	}
	if code, off := tus(t, "PATCH", c.url()+loc, half, bytes.NewReader(body[half:])); code != 204 || off != strconv.Itoa(len(body)) {
		t.Fatalf("the rest through C: %d offset %q", code, off)
	}
	submitUpload(t, "resume-1", loc, body, token, a, b, b)

	// Two writers. A's PATCH holds the lock while its body comes slowly
	// (a pipe, its first MiB sent); B's PATCH at the same offset with
	// other bytes wants the lock.
	first, second := pdf(2<<20, 2), pdf(2<<20, 3)
	loc2 := tusCreate(t, c.url(), "files", len(first), "")
	pr, pw := io.Pipe()
	aDone := make(chan int, 1)
	go func() {
		// Its client may see its request fail rather than an answer
		// (the body cut off below): code 0.
		req, _ := http.NewRequest("PATCH", a.url()+loc2, pr)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Offset", "0")
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			aDone <- 0
			return
		}
		res.Body.Close()
		aDone <- res.StatusCode
	}()
	if _, err := pw.Write(first[:1<<20]); err != nil {
		t.Fatal(err)
	}
	waitLocked(t, storeURL, loc2[strings.LastIndex(loc2, "/")+1:])
	bDone := make(chan int, 1)
	go func() {
		code, _ := tus(t, "PATCH", b.url()+loc2, 0, bytes.NewReader(second))
		bDone <- code
	}()
	codeB := <-bDone
	pw.CloseWithError(io.ErrUnexpectedEOF) // A's client gives up on the rest
	codeA := <-aDone
	kept := first
	switch codeB {
	case 204:
		// B asked before A's request read a byte: A stopped at once and
		// B's bytes are the upload.
		kept = second
	case 409, 423:
		// A kept what it had read when B's request reached it; its
		// client goes on from the offset HEAD gives, as a tus client does.
		code, off := tus(t, "HEAD", c.url()+loc2, 0, nil)
		n, _ := strconv.Atoi(off)
		if code != 200 || n < 0 || n > len(first) {
			t.Fatalf("HEAD after the two writers (A %d, B %d): %d offset %q", codeA, codeB, code, off)
		}
		if code, off := tus(t, "PATCH", a.url()+loc2, n, bytes.NewReader(first[n:])); code != 204 || off != strconv.Itoa(len(first)) {
			t.Fatalf("the rest of A's bytes from %d: %d offset %q", n, code, off)
		}
		t.Logf("two writers: A %d, B %d, A kept %d bytes", codeA, codeB, n)
	default:
		t.Fatalf("two writers: A %d, B %d; want B 204 (A stopped before a byte), 409 or 423", codeA, codeB)
	}
	// The bytes stored are one writer's alone.
	submitUpload(t, "resume-2", loc2, kept, token, b, c, a)
}

// submitUpload submits the upload at loc as the scan of key through
// submitTo; the export through exportFrom then links a file with the
// digest of want, and downloadFrom serves want's bytes at that link.
func submitUpload(t *testing.T, key, loc string, want []byte, token string, submitTo, exportFrom, downloadFrom *instance) {
	t.Helper()
	id := loc[strings.LastIndex(loc, "/")+1:]
	if code, status := submit(t, submitTo.url(), "files", key, map[string]any{"name": "someone", "scan": "upload:" + id}); code != 201 || status != "stored" {
		t.Fatalf("submission of %s through %s: %d %s", key, submitTo.name, code, status)
	}
	sum := sha256.Sum256(want)
	link := fileLinks(t, exportFrom.url(), "files", token)[hex.EncodeToString(sum[:])]
	if link == "" {
		t.Fatalf("%s: the export through %s has no file with the bytes sent", key, exportFrom.name)
	}
	if got := download(t, downloadFrom.url(), link); got != sum {
		t.Fatalf("%s: %s serves other bytes than were sent", key, downloadFrom.name)
	}
}

// waitLocked waits until an upload's lock is held in PostgreSQL (the
// key pgstore.UploadLocks takes).
func waitLocked(t *testing.T, storeURL, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('formd-upload:' || coalesce(current_schema(), '') || ':' || $1, 0)`, id).Scan(&n)
		if err != nil {
			t.Fatalf("look for the upload's lock: %v", err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the first writer never held the upload's lock")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
