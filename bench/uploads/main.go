// Command uploads is the uploads benchmark of BENCHMARKS.md: how fast
// formd takes files over tus against writing the same bytes to the same
// disk with dd conv=fsync, how much memory it holds while many large
// files arrive at once, and how long a client takes to resume an upload
// dropped half way.
//
//   - Throughput: N uploads of -size at once (N = 1 and 20), each a tus
//     creation and one PATCH of the whole file, timed from the first
//     request to the last 204 (every byte fsync'd, hashed, sniffed and
//     recorded); against N dd if=SRC of=FILE bs=1M conv=fsync at once,
//     on the same file system (-dir), in the same round. Rounds
//     alternate formd and dd; the report gives medians and the ratio.
//   - Memory: -big-n uploads of -big-size at once, each one PATCH
//     streamed from a generator (the client never holds a file), while
//     formd's VmRSS is read from /proc every 20 ms; the report gives the
//     RSS before, the highest seen, and VmHWM.
//   - Resume: a -size upload whose connection is cut after half of its
//     bytes; the time from the cut to the 204 of the rest (a HEAD for
//     the offset, a PATCH from there), against sending the whole file.
//
// Usage:
//
//	go build -o /tmp/formd ./cmd/formd
//	go run ./bench/uploads -formd /tmp/formd -dir /var/tmp/formd-bench -rounds 5
//	# the same with the bytes in a bucket (scripts/s3server.sh start DIR prints the variables)
//	go run ./bench/uploads -formd /tmp/formd -dir /var/tmp/formd-bench -uploads "$FORMD_TEST_S3_URL"
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/bench/proc"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// putBaseline PUTs the same bytes straight to the bucket of -uploads
// with minio-go (one PutObject per file, as a client of the bucket
// would), the baseline of the runs with a bucket.
type putBaseline struct {
	c   *minio.Client
	loc s3objects.Location
}

func newPutBaseline(raw string) (*putBaseline, error) {
	loc, err := s3objects.ParseURL(raw)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(loc.Endpoint, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: loc.Secure, Region: loc.Region, BucketLookup: lookup})
	if err != nil {
		return nil, err
	}
	return &putBaseline{c: c, loc: loc}, nil
}

// putMany PUTs n copies of body at once and times them; the objects
// are deleted after.
func (b *putBaseline) putMany(n int, body []byte) (time.Duration, error) {
	ctx := context.Background()
	errs := make(chan error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := b.c.PutObject(ctx, b.loc.Bucket, fmt.Sprintf("%sbench-put-%d", b.loc.Prefix, i), bytes.NewReader(body), int64(len(body)),
				minio.PutObjectOptions{ContentType: "application/octet-stream"})
			errs <- err
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, fmt.Errorf("PUT to the bucket: %w", err)
		}
	}
	for i := range n {
		b.c.RemoveObject(ctx, b.loc.Bucket, fmt.Sprintf("%sbench-put-%d", b.loc.Prefix, i), minio.RemoveObjectOptions{})
	}
	return took, nil
}

const formYAML = `id: bench-files
site: bench
title: Upload benchmark
fields:
  - {name: doc, type: file, max_size: 64MiB, accept: [application/pdf]}
`

func main() {
	bin := flag.String("formd", "", "the formd binary to run (required)")
	dir := flag.String("dir", "", "a directory on the disk to measure: formd's --data and dd's files go here (default: a new one under the system's temp dir)")
	rounds := flag.Int("rounds", 5, "rounds of the throughput comparison")
	size := flag.Int("size", 10<<20, "bytes of each upload in the throughput and resume runs")
	bigN := flag.Int("big-n", 50, "concurrent uploads in the memory run")
	bigSize := flag.Int("big-size", 50<<20, "bytes of each upload in the memory run")
	flag.StringVar(&uploadsTo, "uploads", "", "formd's --uploads (such as s3://formd-test?endpoint=http://127.0.0.1:8333, credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY); default its --data")
	flag.Parse()
	// -big-n 0 skips the memory run, and then the resume run.
	if *bin == "" {
		log.Fatal("give -formd, the binary to run")
	}
	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "formd-bench-uploads-"); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		log.Fatal(err)
	}
	work, err := os.MkdirTemp(root, "run-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)

	srv, err := start(*bin, work)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.stop()
	// A failure stops formd and removes the run's files too.
	fatal := func(err error) {
		srv.stop()
		os.RemoveAll(work)
		log.Fatal(err)
	}
	fmt.Printf("machine: %d CPUs (shared with other work), load %s; disk under %s\n", runtime.NumCPU(), proc.LoadAvg(), root)

	body := pdf(*size)
	src := filepath.Join(work, "dd-src")
	if err := os.WriteFile(src, body, 0o600); err != nil {
		fatal(err)
	}
	var bucket *putBaseline
	if uploadsTo != "" {
		if bucket, err = newPutBaseline(uploadsTo); err != nil {
			fatal(err)
		}
	}
	for _, n := range []int{1, 20} {
		var ups, dds, puts []time.Duration
		for r := 0; r < *rounds; r++ {
			d, err := srv.uploadMany(n, body)
			if err != nil {
				fatal(err)
			}
			ups = append(ups, d)
			d, err = ddMany(n, src, work)
			if err != nil {
				fatal(err)
			}
			dds = append(dds, d)
			if bucket != nil {
				if d, err = bucket.putMany(n, body); err != nil {
					fatal(err)
				}
				puts = append(puts, d)
			}
		}
		mu, md := median(ups), median(dds)
		mib := float64(n**size) / (1 << 20)
		fmt.Printf("%2d × %d MiB at once: formd median %v (%.0f MiB/s), dd conv=fsync median %v (%.0f MiB/s): %.2f× dd  [formd %v; dd %v]\n",
			n, *size>>20, mu.Round(time.Millisecond), mib/mu.Seconds(), md.Round(time.Millisecond), mib/md.Seconds(),
			md.Seconds()/mu.Seconds(), rounded(ups), rounded(dds))
		if bucket != nil {
			mp := median(puts)
			fmt.Printf("%2d × %d MiB at once: minio-go PutObject straight to the bucket median %v (%.0f MiB/s): formd %.2f× the PUT  [PUT %v]\n",
				n, *size>>20, mp.Round(time.Millisecond), mib/mp.Seconds(), mp.Seconds()/mu.Seconds(), rounded(puts))
		}
	}
	if *bigN <= 0 {
		return
	}

	// Memory: many big uploads at once.
	before := srv.rss()
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				peak = max(peak, srv.rss())
			}
		}
	}()
	start := time.Now()
	err = srv.uploadStreams(*bigN, *bigSize)
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		fatal(err)
	}
	fmt.Printf("memory: %d × %d MiB at once (%d MiB in %v): formd VmRSS %d MiB before, at most %d MiB during (VmHWM %d MiB)\n",
		*bigN, *bigSize>>20, *bigN**bigSize>>20, took.Round(time.Millisecond), before>>20, peak>>20, srv.hwm()>>20)

	// Resume after a drop at 50 %.
	var resumes, wholes []time.Duration
	for r := 0; r < *rounds; r++ {
		d, err := srv.resumeAtHalf(body)
		if err != nil {
			fatal(err)
		}
		resumes = append(resumes, d)
		w, err := srv.uploadMany(1, body)
		if err != nil {
			fatal(err)
		}
		wholes = append(wholes, w)
	}
	fmt.Printf("resume after a drop at 50 %% of %d MiB: median %v from the drop to the last 204 (HEAD + PATCH of the rest), against %v for the whole file  [%v; offsets kept at the drop %v of %d sent]\n",
		*size>>20, median(resumes).Round(time.Millisecond), median(wholes).Round(time.Millisecond), rounded(resumes), kept, len(body)/2)
}

// uploadsTo is formd's --uploads, when given.
var uploadsTo string

type server struct {
	cmd  *exec.Cmd
	base string
	http *http.Client
}

func start(bin, work string) (*server, error) {
	forms := filepath.Join(work, "forms.yaml")
	if err := os.WriteFile(forms, []byte(formYAML), 0o600); err != nil {
		return nil, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"serve", "--data", filepath.Join(work, "data"), "--addr", addr, "--forms", forms,
		"--log-level", "warn", "--rate-limit", "off",
		// One address sends every upload: the budgets of what strangers
		// may make the server keep are not what is measured.
		"--upload-address-bytes", "0", "--upload-address-in-flight", "0", "--upload-form-bytes", "0", "--upload-form-in-flight", "0"}
	if uploadsTo != "" {
		args = append(args, "--uploads", uploadsTo)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "FORMD_CONFIG=")
	logf, err := os.Create(filepath.Join(work, "formd.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}, Timeout: 10 * time.Minute}}
	if err := proc.WaitReady(s.base+"/readyz", 30*time.Second); err != nil {
		s.stop()
		b, _ := os.ReadFile(logf.Name())
		return nil, fmt.Errorf("%w\n%s", err, b)
	}
	return s, nil
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
	s.cmd.Wait()                       //nolint:errcheck // its exit status does not matter here
}

// status reads a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func (s *server) status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (s *server) rss() int64 { return s.status("VmRSS") }
func (s *server) hwm() int64 { return s.status("VmHWM") }

func (s *server) create(size int) (string, error) {
	req, _ := http.NewRequest("POST", s.base+"/v1/forms/bench-files/uploads", nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.Itoa(size))
	req.Header.Set("Upload-Metadata", "field "+base64.StdEncoding.EncodeToString([]byte("doc")))
	res, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, res.Body) //nolint:errcheck // drained for reuse
	res.Body.Close()
	if res.StatusCode != 201 {
		return "", fmt.Errorf("create: %s", res.Status)
	}
	return s.base + res.Header.Get("Location"), nil
}

func (s *server) patch(loc string, offset int64, body io.Reader, n int64) error {
	req, _ := http.NewRequest("PATCH", loc, body)
	req.ContentLength = n
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", strconv.FormatInt(offset, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	res, err := s.http.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 204 {
		return fmt.Errorf("PATCH: %s %s", res.Status, b)
	}
	return nil
}

// uploadMany sends n uploads of body at once and times them.
func (s *server) uploadMany(n int, body []byte) (time.Duration, error) {
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		go func() {
			loc, err := s.create(len(body))
			if err == nil {
				err = s.patch(loc, 0, bytes.NewReader(body), int64(len(body)))
			}
			errs <- err
		}()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	return time.Since(start), err
}

// uploadStreams sends n uploads of size bytes at once, each generated as
// it is sent.
func (s *server) uploadStreams(n, size int) error {
	errs := make(chan error, n)
	for range n {
		go func() {
			loc, err := s.create(size)
			if err == nil {
				err = s.patch(loc, 0, &pdfReader{left: int64(size)}, int64(size))
			}
			errs <- err
		}()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	return err
}

// kept are the offsets the resumptions found.
var kept []int64

// resumeAtHalf sends half of body, cuts the connection, and times the
// resumption: HEAD for the offset, PATCH of the rest.
func (s *server) resumeAtHalf(body []byte) (time.Duration, error) {
	loc, err := s.create(len(body))
	if err != nil {
		return 0, err
	}
	half := len(body) / 2
	cut := &cutReader{r: bytes.NewReader(body), left: half}
	if err := s.patch(loc, 0, cut, int64(len(body))); err == nil {
		return 0, errors.New("the cut PATCH succeeded")
	}
	dropped := time.Now()
	var offset int64
	for {
		req, _ := http.NewRequest("HEAD", loc, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		res, err := s.http.Do(req)
		if err != nil {
			return 0, err
		}
		res.Body.Close()
		offset, _ = strconv.ParseInt(res.Header.Get("Upload-Offset"), 10, 64)
		if res.StatusCode == 200 {
			break
		}
		if res.StatusCode != 423 && res.StatusCode != 500 && res.StatusCode != 503 {
			return 0, fmt.Errorf("HEAD: %s", res.Status)
		}
		time.Sleep(5 * time.Millisecond) // the cut PATCH still holds the upload
	}
	kept = append(kept, offset)
	if err := s.patch(loc, offset, bytes.NewReader(body[offset:]), int64(len(body))-offset); err != nil {
		return 0, err
	}
	return time.Since(dropped), nil
}

// cutReader gives left bytes, then fails, as a dropped connection.
type cutReader struct {
	r    io.Reader
	left int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection dropped")
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// pdfReader generates left bytes that sniff as a PDF.
type pdfReader struct {
	off, left int64
}

func (r *pdfReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.left))
	for i := range n {
		p[i] = byte((r.off + int64(i)) * 31)
	}
	if r.off == 0 {
		copy(p[:n], "%PDF-1.4\n")
	}
	r.off += int64(n)
	r.left -= int64(n)
	return n, nil
}

func pdf(n int) []byte {
	b := make([]byte, n)
	(&pdfReader{left: int64(n)}).Read(b) //nolint:errcheck // fills b
	return b
}

// ddMany runs n dd conv=fsync of src at once into dir and times them.
func ddMany(n int, src, dir string) (time.Duration, error) {
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		go func() {
			out := filepath.Join(dir, fmt.Sprintf("dd-%d", i))
			b, err := exec.Command("dd", "if="+src, "of="+out, "bs=1M", "conv=fsync", "status=none").CombinedOutput()
			if err != nil {
				err = fmt.Errorf("dd: %v %s", err, b)
			}
			errs <- err
		}()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	d := time.Since(start)
	for i := range n {
		os.Remove(filepath.Join(dir, fmt.Sprintf("dd-%d", i)))
	}
	return d, err
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
