package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/loadtest"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const uploadCrashForms = `
id: files
site: crash
title: Upload crash test
fields:
  - {name: name, type: text, required: true}
  - {name: scan, type: file, required: true, max_size: 2MiB, accept: [application/pdf]}
`

// uploader is a tus client that keeps going through faults the way the
// SDK does: a creation whose answer was lost is made again (the first
// one is left unclaimed, to expire), a PATCH that failed is followed by a
// HEAD for the offset and a PATCH from there, and the submission is sent
// again under the same key until it is answered.
type uploader struct {
	c    *http.Client
	base string
}

var errFault = errors.New("no answer")

func (u uploader) do(ctx context.Context, method, url string, hdr map[string]string, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := u.c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errFault, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errFault, err)
	}
	return res, b, nil
}

// retry runs f until it returns no fault error, or ctx ends.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !errors.Is(err, errFault) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// send uploads body and returns the upload's id.
func (u uploader) send(ctx context.Context, body []byte, creations *atomic.Int64) (string, error) {
	var loc string
	err := retry(ctx, func() error {
		creations.Add(1)
		res, b, err := u.do(ctx, "POST", u.base+"/v1/forms/files/uploads", map[string]string{
			"Upload-Length": strconv.Itoa(len(body)), "Upload-Metadata": "field " + base64.StdEncoding.EncodeToString([]byte("scan")),
		}, nil)
		if err != nil {
			return err
		}
		if res.StatusCode >= 500 {
			return fmt.Errorf("%w: create %d", errFault, res.StatusCode)
		}
		if res.StatusCode != 201 {
			return fmt.Errorf("create: %d %s", res.StatusCode, b)
		}
		loc = res.Header.Get("Location")
		return nil
	})
	if err != nil {
		return "", err
	}
	const chunk = 64 << 10
	offset := 0
	for offset < len(body) {
		end := min(offset+chunk, len(body))
		err := retry(ctx, func() error {
			res, b, err := u.do(ctx, "PATCH", u.base+loc, map[string]string{
				"Upload-Offset": strconv.Itoa(offset), "Content-Type": "application/offset+octet-stream"}, body[offset:end])
			if err == nil && res.StatusCode == 204 {
				offset, _ = strconv.Atoi(res.Header.Get("Upload-Offset"))
				return nil
			}
			if err == nil && res.StatusCode != 409 && res.StatusCode < 500 && res.StatusCode != 423 {
				return fmt.Errorf("PATCH at %d: %d %s", offset, res.StatusCode, b)
			}
			// Where does the upload stand?
			hres, _, herr := u.do(ctx, "HEAD", u.base+loc, nil, nil)
			if herr == nil && hres.StatusCode == 200 {
				offset, _ = strconv.Atoi(hres.Header.Get("Upload-Offset"))
				return nil
			}
			return fmt.Errorf("%w: PATCH at %d", errFault, offset)
		})
		if err != nil {
			return "", err
		}
	}
	return loc[strings.LastIndex(loc, "/")+1:], nil
}

// submit sends the submission under key until it is answered.
func (u uploader) submit(ctx context.Context, key string, person int, id string) (int, error) {
	body := fmt.Sprintf(`{"name":"Person %d","scan":"upload:%s"}`, person, id)
	var code int
	err := retry(ctx, func() error {
		res, _, err := u.do(ctx, "POST", u.base+"/v1/forms/files/submissions", map[string]string{
			"Content-Type": "application/json", "Idempotency-Key": key, "Prefer": "wait=5"}, []byte(body))
		if err != nil {
			return err
		}
		if res.StatusCode >= 500 {
			return fmt.Errorf("%w: submit %d", errFault, res.StatusCode)
		}
		code = res.StatusCode
		return nil
	})
	return code, err
}

// fixedFormd runs formd on a fixed address, so that the fault proxy in
// front of it reaches each incarnation.
func fixedFormd(t *testing.T, bin, data, forms, addr string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--data", data, "--addr", addr, "--metrics-addr", "off", "--forms", forms,
		"--rate-limit", "off", "--log-level", "warn"}, extra...)...)
	logs, err := os.OpenFile(filepath.Join(filepath.Dir(data), "formd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	poll.UntilOK(t, "formd to answer /readyz", 30*time.Second, "http://"+addr+"/readyz")
	return cmd
}

// Uploads through the fault proxy of formd loadtest (dropped requests
// and answers, resets) while formd is killed with SIGKILL twice in the
// middle: every acknowledged submission has exactly its own file, byte
// for byte (the recorded SHA-256 and the bytes on disk against what was
// sent); no upload is claimed twice; the uploads no submission claimed
// (creations whose answer was lost) expire and their bytes go.
func TestUploadsThroughFaultsAndKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server; skipped with -short")
	}
	t.Parallel()
	uploadsThroughFaults(t, nil)
}

// The same with --uploads on an S3 bucket (FORMD_TEST_S3_URL, a real
// S3-compatible server such as scripts/s3server.sh's SeaweedFS): the
// parts of uploads being sent are in the bucket, so a PATCH acknowledged
// before a SIGKILL is continued after it from the bucket; every
// acknowledged entry's object is its bytes; the unclaimed uploads
// expire and their objects, parts (.part, .info) and multipart uploads
// go from the bucket.
func TestUploadsOnS3ThroughFaultsAndKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server; skipped with -short")
	}
	raw := objectstest.S3URL(t)
	t.Parallel()
	loc, err := s3objects.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	u.Path = "/" + strings.TrimSuffix(loc.Prefix, "/")
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	tr, err := minio.DefaultTransport(loc.Secure)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections) // goleak
	c, err := minio.New(loc.Endpoint, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: loc.Secure, Region: loc.Region, BucketLookup: lookup, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	uploadsThroughFaults(t, &crashBucket{url: u.String(), loc: loc, c: c})
}

// crashBucket is the bucket of the S3 variant.
type crashBucket struct {
	url string
	loc s3objects.Location
	c   *minio.Client
}

// bytes reads an upload's object.
func (b *crashBucket) bytes(ctx context.Context, id string) ([]byte, error) {
	o, err := b.c.GetObject(ctx, b.loc.Bucket, b.loc.Prefix+id, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// left lists what is under the prefix other than the claimed uploads'
// objects: objects (parts, .info, unclaimed objects) and multipart
// uploads not completed or aborted.
func (b *crashBucket) left(ctx context.Context, claimed map[string]bool) ([]string, error) {
	var left []string
	for o := range b.c.ListObjects(ctx, b.loc.Bucket, minio.ListObjectsOptions{Prefix: b.loc.Prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		if !claimed[strings.TrimPrefix(o.Key, b.loc.Prefix)] {
			left = append(left, o.Key)
		}
	}
	for mu := range b.c.ListIncompleteUploads(ctx, b.loc.Bucket, b.loc.Prefix, true) {
		if mu.Err != nil {
			return nil, mu.Err
		}
		left = append(left, "multipart upload of "+mu.Key)
	}
	return left, nil
}

func uploadsThroughFaults(t *testing.T, bucket *crashBucket) {
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	data := filepath.Join(dir, "data")
	formsPath := writeForms(t, dir, uploadCrashForms)
	addr := freeAddrs(t, 1)[0]
	expiry := []string{"--upload-expiry", "1m"}
	if bucket != nil {
		expiry = append(expiry, "--uploads", bucket.url)
	}
	srv := fixedFormd(t, bin, data, formsPath, addr, expiry...)
	proxy, err := loadtest.StartProxy(addr, loadtest.Faults{DropRequests: 0.05, DropResponses: 0.05, Resets: 0.03})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	u := uploader{c: &http.Client{Timeout: 5 * time.Second}, base: "http://" + proxy.Addr()}

	const people = 24
	sent := make([][32]byte, people)
	codes := make([]int, people)
	var creations, done atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, people)
	for p := range people {
		body := make([]byte, 150<<10+p*7919)
		rand.Read(body)
		copy(body, "%PDF-1.4\n") // a PDF without metadata to strip
		sent[p] = sha256.Sum256(body)
		wg.Go(func() {
			id, err := u.send(ctx, body, &creations)
			if err == nil {
				codes[p], err = u.submit(ctx, fmt.Sprintf("person-%d", p), p, id)
			}
			done.Add(1)
			if err != nil {
				errs <- fmt.Errorf("person %d: %w", p, err)
			}
		})
	}
	// SIGKILL twice while the uploads go on, each time started again on
	// the same address behind the proxy.
	for _, at := range []int64{people / 4, people / 2} {
		poll.Until(t, "uploads to progress", 2*time.Minute, func() bool { return done.Load() >= at || proxy.Stats().Forwarded > at*6 })
		srv.Process.Signal(syscall.SIGKILL)
		srv.Wait()
		srv = fixedFormd(t, bin, data, formsPath, addr, expiry...)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	stats := proxy.Stats()
	t.Logf("%d creations for %d files; proxy: %+v", creations.Load(), people, stats)
	if stats.DroppedRequests+stats.DroppedResponses+stats.Resets == 0 {
		t.Fatal("the proxy injected no fault; the test proved nothing")
	}
	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()

	// The entries, their files' recorded digests and their upload ids.
	byPerson := map[string][]exportedFile{}
	for _, row := range exportFiles(t, bin, data) {
		byPerson[row.Data.Name] = append(byPerson[row.Data.Name], row.Data.Scan)
	}
	claimed := map[string]bool{}
	for p := range people {
		files := byPerson[fmt.Sprintf("Person %d", p)]
		if codes[p] != 201 && codes[p] != 200 {
			t.Errorf("person %d: answered %d", p, codes[p])
			continue
		}
		if len(files) != 1 {
			t.Errorf("person %d (acknowledged) has %d entries", p, len(files))
			continue
		}
		f := files[0]
		if f.SHA256 != hex.EncodeToString(sent[p][:]) {
			t.Errorf("person %d: the entry's file is recorded as %s, sent %x", p, f.SHA256, sent[p])
		}
		id := f.uploadID()
		if claimed[id] {
			t.Errorf("upload %s claimed twice", id)
		}
		claimed[id] = true
		var b []byte
		if bucket != nil {
			b, err = bucket.bytes(ctx, id)
		} else {
			b, err = readUpload(data, id)
		}
		if err != nil || sha256.Sum256(b) != sent[p] {
			t.Errorf("person %d: the bytes on disk are not the bytes sent (%v)", p, err)
		}
	}
	if len(byPerson) != people {
		t.Errorf("%d people in the export, want %d", len(byPerson), people)
	}

	// The uploads nobody claimed expire, and their bytes go; the claimed
	// ones stay.
	srv = fixedFormd(t, bin, data, formsPath, addr, expiry...)
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	if bucket != nil {
		poll.UntilNil(t, "unclaimed uploads to expire from the bucket", 3*time.Minute, func() error {
			left, err := bucket.left(context.Background(), claimed)
			if err != nil {
				return err
			}
			if len(left) > 0 {
				return fmt.Errorf("%d objects or part uploads of unclaimed uploads left: %v", len(left), head(left))
			}
			return nil
		})
		for id := range claimed {
			if _, err := bucket.bytes(context.Background(), id); err != nil {
				t.Errorf("a claimed upload's object went: %v", err)
			}
		}
		return
	}
	poll.UntilNil(t, "unclaimed uploads to expire", 3*time.Minute, func() error {
		// The parts of uploads being received and the ids of complete
		// ones (uploads/objects/ids).
		var left []string
		err := dirobjects.DirBytes(filepath.Join(data, "uploads")).ListBytes(context.Background(), func(name string, _ time.Time) error {
			if id := strings.TrimSuffix(name, ".info"); !claimed[id] {
				left = append(left, name)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("%d files of unclaimed uploads left: %v", len(left), head(left))
		}
		return nil
	})
	for id := range claimed {
		if _, err := readUpload(data, id); err != nil {
			t.Errorf("a claimed upload's bytes went: %v", err)
		}
	}
}

// readUpload reads a complete upload's bytes from --data.
func readUpload(data, id string) ([]byte, error) {
	f, err := dirobjects.DirBytes(filepath.Join(data, "uploads")).Open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func head(s []string) []string {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}
