package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"
)

// A target is one way of sending uploads that the report compares: a
// tus server, and whether the harness makes what the server wrote
// durable itself (tusd, whose filestore never fsyncs).
type target struct {
	name string
	srv  *server
	// create is the tus creation URL.
	create string
	// syncDir, when set, is the server's upload directory: after a
	// creation's 201 the harness fsyncs the new bytes file, its .info
	// and the directory, and after a PATCH's answer the bytes file —
	// what formd's store does before it answers — and the time counts
	// as the server's.
	syncDir string
}

// content is the bytes of one upload: the shared body with a tag of its
// own after the PDF header, so that no two uploads have the same
// SHA-256 (formd keeps identical bytes once, which a benchmark of
// identical files would flatter) while the client copies nothing.
type content struct {
	body []byte
	tag  [16]byte
}

// headLen is the PDF header the tag follows, so that formd sniffs every
// upload as a PDF.
const headLen = 9

var tagSeq int64

func newContent(body []byte) content {
	tagSeq++
	c := content{body: body}
	copy(c.tag[:], fmt.Sprintf("%015d\n", tagSeq))
	return c
}

func (c content) size() int64 { return int64(len(c.body)) }

// from reads the upload's bytes from off.
func (c content) from(off int64) io.Reader {
	var rs []io.Reader
	for _, seg := range [][]byte{c.body[:headLen], c.tag[:], c.body[headLen+len(c.tag):]} {
		if off >= int64(len(seg)) {
			off -= int64(len(seg))
			continue
		}
		rs = append(rs, bytes.NewReader(seg[off:]))
		off = 0
	}
	return io.MultiReader(rs...)
}

func (t *target) newUpload(size int64) (string, error) {
	req, _ := http.NewRequest("POST", t.create, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", "field "+base64.StdEncoding.EncodeToString([]byte("doc")))
	res, err := t.srv.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: create: %w", t.name, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		return "", fmt.Errorf("%s: create: %s %s", t.name, res.Status, b)
	}
	// formd answers with a path, tusd with a whole URL.
	base, _ := url.Parse(t.create)
	loc, err := base.Parse(res.Header.Get("Location"))
	if err != nil {
		return "", fmt.Errorf("%s: create: Location %q: %w", t.name, res.Header.Get("Location"), err)
	}
	if err := t.durable(loc.String(), true); err != nil {
		return "", err
	}
	return loc.String(), nil
}

// durable fsyncs, for a target with syncDir, what the server wrote for
// the upload at loc: after the creation the bytes file, the .info file
// and their directory; after a PATCH the bytes file (tusd's filestore
// does not write .info again on a PATCH: the offset is the bytes file's
// size). An fsync of another descriptor of the same file writes the
// same dirty pages the server left.
func (t *target) durable(loc string, created bool) error {
	if t.syncDir == "" {
		return nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	bin := filepath.Join(t.syncDir, path.Base(u.Path))
	paths := []string{bin}
	if created {
		paths = append(paths, bin+".info", t.syncDir)
	}
	for _, p := range paths {
		if err := fsync(p); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	return nil
}

func fsync(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", p, err)
	}
	return f.Close()
}

func (t *target) patch(loc string, offset int64, body io.Reader, n int64) error {
	req, _ := http.NewRequest("PATCH", loc, body)
	req.ContentLength = n
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", strconv.FormatInt(offset, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	res, err := t.srv.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: PATCH: %w", t.name, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 204 {
		return &statusError{op: t.name + ": PATCH", code: res.StatusCode, status: res.Status, body: string(b)}
	}
	return t.durable(loc, false)
}

// statusError is an answer other than the one a request wanted.
type statusError struct {
	op, status, body string
	code             int
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: %s %s", e.op, e.status, e.body) }

// send makes one upload of c: a creation and one PATCH of every byte.
func (t *target) send(c content) (string, error) {
	loc, err := t.newUpload(c.size())
	if err != nil {
		return "", err
	}
	return loc, t.patch(loc, 0, c.from(0), c.size())
}

// uploadMany sends n uploads of body (each with its own tag) at once and
// times them, from the first request to the last 204 (and, for a target
// with syncDir, the last fsync after it). It gives the uploads' URLs,
// to delete them after.
func (t *target) uploadMany(n int, body []byte) (time.Duration, []string, error) {
	cs := make([]content, n)
	for i := range cs {
		cs[i] = newContent(body)
	}
	start := time.Now()
	locs, err := atOnce(n, func(i int) (string, error) { return t.send(cs[i]) })
	return time.Since(start), locs, err
}

// atOnce runs upload(0) … upload(n-1) at once and gathers the uploads'
// URLs (those that were made) and every error.
func atOnce(n int, upload func(i int) (string, error)) ([]string, error) {
	type result struct {
		loc string
		err error
	}
	res := make(chan result, n)
	for i := range n {
		go func() {
			loc, err := upload(i)
			res <- result{loc, err}
		}()
	}
	var locs []string
	var err error
	for range n {
		r := <-res
		if r.loc != "" {
			locs = append(locs, r.loc)
		}
		err = errors.Join(err, r.err)
	}
	return locs, err
}

// uploadStreams sends n uploads of size bytes at once, each generated as
// it is sent, so that the client holds none of them.
func (t *target) uploadStreams(n int, size int64) ([]string, error) {
	return atOnce(n, func(int) (string, error) {
		loc, err := t.newUpload(size)
		if err == nil {
			err = t.patch(loc, 0, &pdfReader{left: size}, size)
		}
		return loc, err
	})
}

// remove deletes uploads through tus (a termination), so that the disk
// holds one batch at a time; it is not timed.
func (t *target) remove(locs []string) error {
	var err error
	for _, loc := range locs {
		req, _ := http.NewRequest("DELETE", loc, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		res, derr := t.srv.http.Do(req)
		if derr != nil {
			err = errors.Join(err, fmt.Errorf("%s: DELETE: %w", t.name, derr))
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 204 {
			err = errors.Join(err, fmt.Errorf("%s: DELETE %s: %s %s", t.name, loc, res.Status, b))
		}
	}
	return err
}

// resumption is one resume after a drop at 50 %.
type resumption struct {
	// toOffset is from the drop to the answer of the HEAD the resume
	// went on from (and, for a target with syncDir, the fsync of what
	// the server kept); rest is from there to the PATCH's 204 (and the
	// fsync after it).
	toOffset, rest time.Duration
	// kept is the offset the resume went on from; tries counts the
	// HEAD + PATCH pairs it took (a PATCH from an offset the server has
	// gone past since is answered 409, and a tus client asks again).
	kept  int64
	tries int
	loc   string
}

// maxTries bounds the HEAD + PATCH pairs of one resume.
const maxTries = 10

// resumeAtHalf sends half of an upload, cuts the connection, and times
// the resumption: HEAD for the offset, PATCH of the rest, as a tus
// client does — again from a new HEAD when the PATCH's offset is one the
// server has gone past (the cut PATCH's bytes the server read after the
// HEAD answered).
func (t *target) resumeAtHalf(body []byte) (resumption, error) {
	c := newContent(body)
	loc, err := t.newUpload(c.size())
	if err != nil {
		return resumption{}, err
	}
	r := resumption{loc: loc}
	cut := &cutReader{r: c.from(0), left: c.size() / 2}
	if err := t.patch(loc, 0, cut, c.size()); err == nil {
		return r, fmt.Errorf("%s: the cut PATCH succeeded", t.name)
	}
	dropped := time.Now()
	for r.tries = 1; ; r.tries++ {
		if r.kept, err = t.offset(loc); err != nil {
			return r, err
		}
		// What the server kept is durable before the client builds on it.
		if err := t.durable(loc, false); err != nil {
			return r, err
		}
		known := time.Now()
		err := t.patch(loc, r.kept, c.from(r.kept), c.size()-r.kept)
		if se := (*statusError)(nil); errors.As(err, &se) && se.code == http.StatusConflict && r.tries < maxTries {
			continue
		}
		if err != nil {
			return r, fmt.Errorf("resume from %d (try %d): %w", r.kept, r.tries, err)
		}
		r.toOffset, r.rest = known.Sub(dropped), time.Since(known)
		return r, nil
	}
}

// offset asks the server where the upload at loc stands (HEAD), again
// while the upload is held by the request the cut ended.
func (t *target) offset(loc string) (int64, error) {
	for {
		req, _ := http.NewRequest("HEAD", loc, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		res, err := t.srv.http.Do(req)
		if err != nil {
			return 0, fmt.Errorf("%s: HEAD: %w", t.name, err)
		}
		res.Body.Close()
		if res.StatusCode == 200 {
			off, err := strconv.ParseInt(res.Header.Get("Upload-Offset"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: HEAD: Upload-Offset %q: %w", t.name, res.Header.Get("Upload-Offset"), err)
			}
			return off, nil
		}
		if res.StatusCode != 423 && res.StatusCode != 500 && res.StatusCode != 503 {
			return 0, fmt.Errorf("%s: HEAD: %s", t.name, res.Status)
		}
		time.Sleep(5 * time.Millisecond) // the cut PATCH still holds the upload
	}
}

// cutReader gives left bytes, then fails, as a dropped connection.
type cutReader struct {
	r    io.Reader
	left int64
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection dropped")
	}
	n, err := c.r.Read(p[:min(int64(len(p)), c.left)])
	c.left -= int64(n)
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

func pdf(n int64) []byte {
	b := make([]byte, n)
	(&pdfReader{left: n}).Read(b) //nolint:errcheck // fills b
	return b
}
