package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/objectstest"
	"go.uber.org/goleak"
)

// tusd keeps a request's context for a grace period after the request
// (Config.GracefulRequestCompletionTimeout), in a goroutine of its own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/tus/tusd/v2/pkg/handler.newDelayedContext.func1"))
}

const photoForm = `
id: exam
fields:
  - {name: name,  type: text}
  - {name: photo, type: file, required: true, max_size: 64KiB, accept: [image/png, image/jpeg]}
`

type forms map[string]*form.Form

func (f forms) Get(id string) *form.Form { return f[id] }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type rig struct {
	t     *testing.T
	svc   *Service
	st    *sqlitestore.Store
	srv   *httptest.Server
	clock *clock
	dir   string
	forms forms
	// backlog is the journal's backlog the expiry pass reads.
	backlog *backlog
}

func newRig(t *testing.T) *rig { t.Helper(); return newRigWith(t, photoForm, nil) }

// newRigWith is newRig with the forms of defs (the first is served as
// exam too) and the config changed by tune.
func newRigWith(t *testing.T, defs string, tune func(*Config)) *rig {
	t.Helper()
	fs, err := form.Parse([]byte(defs), "")
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
	bl := &backlog{}
	for _, x := range fs {
		f[x.ID()] = x
	}
	cfg := Config{Dir: dir, Expiry: 24 * time.Hour, Now: c.Now, Backlog: bl}
	if tune != nil {
		tune(&cfg)
	}
	svc, err := New(st, f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &rig{t: t, svc: svc, st: st, srv: srv, clock: c, dir: dir, forms: f, backlog: bl}
}

// backlog is a journal's backlog as the expiry pass reads it.
type backlog struct {
	mu     sync.Mutex
	oldest time.Time // zero: nothing undecided
	err    error
}

func (b *backlog) set(t time.Time) { b.mu.Lock(); b.oldest = t; b.mu.Unlock() }

func (b *backlog) Stats(context.Context) (journal.Stats, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return journal.Stats{}, b.err
	}
	if b.oldest.IsZero() {
		return journal.Stats{}, nil
	}
	return journal.Stats{Backlog: 1, OldestPending: b.oldest}, nil
}

// decide decides an entry naming the upload id in field of formID, as a
// submission's decision does (the store's transaction, DESIGN invariant
// 12), received now.
func (r *rig) decide(key, formID, field, id string) store.Outcome {
	r.t.Helper()
	return r.decideUpload(key, formID, journal.Upload{ID: id, Field: field}, r.clock.Now())
}

// decideUpload is decide with the upload as the entry names it (a posted
// file's with its facts) and the time the entry was received.
func (r *rig) decideUpload(key, formID string, up journal.Upload, received time.Time) store.Outcome {
	r.t.Helper()
	e := journal.Entry{ID: "e-" + key, Seq: 1, Site: "default", Form: formID, Key: key, ReceivedAt: received,
		Data:    []byte(`{"` + up.Field + `":"upload:` + up.ID + `","_uploads":["` + up.ID + `"]}`),
		Uploads: []journal.Upload{up}}
	out, err := r.st.Apply(context.Background(), []journal.Entry{e})
	if err != nil {
		r.t.Fatalf("decide %s: %v", key, err)
	}
	return out[0]
}

func (r *rig) do(method, path string, hdr map[string]string, body []byte) *http.Response {
	r.t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := r.srv.Client().Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { res.Body.Close() })
	return res
}

func metadata(kv ...string) string {
	var parts []string
	for i := 0; i < len(kv); i += 2 {
		parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
	}
	return strings.Join(parts, ",")
}

// create makes an upload of n bytes for the field and returns its path.
// photo uploads a PNG of n bytes whole to field photo: its address
// and id.
func (r *rig) photo(n int) (loc, id string) {
	r.t.Helper()
	loc = r.create("photo", n)
	if res := r.patch(loc, 0, png(n), false); res.StatusCode != 204 {
		r.t.Fatalf("PATCH: %d %s", res.StatusCode, problemCode(r.t, res))
	}
	return loc, strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
}

func (r *rig) create(field string, n int) string {
	r.t.Helper()
	res := r.do("POST", "/v1/forms/exam/uploads", map[string]string{
		"Upload-Length": strconv.Itoa(n), "Upload-Metadata": metadata("field", field, "filename", "我的照片.png"),
	}, nil)
	if res.StatusCode != 201 {
		b, _ := io.ReadAll(res.Body)
		r.t.Fatalf("create: %d %s", res.StatusCode, b)
	}
	loc := res.Header.Get("Location")
	if !strings.HasPrefix(loc, "/v1/forms/exam/uploads/") {
		r.t.Fatalf("Location %q", loc)
	}
	if _, err := http.ParseTime(res.Header.Get("Upload-Expires")); err != nil {
		r.t.Fatalf("Upload-Expires %q: %v", res.Header.Get("Upload-Expires"), err)
	}
	return loc
}

func (r *rig) patch(loc string, offset int, chunk []byte, override bool) *http.Response {
	r.t.Helper()
	hdr := map[string]string{"Upload-Offset": strconv.Itoa(offset), "Content-Type": "application/offset+octet-stream"}
	method := "PATCH"
	if override {
		method = "POST"
		hdr["X-HTTP-Method-Override"] = "PATCH"
	}
	return r.do(method, loc, hdr, chunk)
}

func problemCode(t *testing.T, res *http.Response) string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
		Status int    `json:"status"`
	}
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.Status != res.StatusCode {
		t.Fatalf("problem status %d on an answer of %d", p.Status, res.StatusCode)
	}
	return p.Code + ": " + p.Detail
}

// kept is the path of upload id's bytes in the objects directory under
// the uploads directory dir, by the layout dirobjects documents (a path
// that does not exist when it has none).
func kept(dir, id string) string {
	ld := filepath.Join(dir, dirobjects.ObjectsDir, "ids", id[:2], id)
	sum := "none"
	if ents, _ := os.ReadDir(ld); len(ents) == 1 {
		sum = ents[0].Name()
	}
	return filepath.Join(ld, sum)
}

// bytesGone says upload id has neither parts nor an object under dir.
func bytesGone(dir, id string) bool {
	for _, p := range []string{filepath.Join(dir, id), filepath.Join(dir, id+".info"), filepath.Dir(kept(dir, id))} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			return false
		}
	}
	return true
}

// png is n bytes that sniff as a PNG image.
func png(n int) []byte {
	b := bytes.Repeat([]byte{0xab}, n)
	copy(b, "\x89PNG\r\n\x1a\n")
	for i := 8; i < n; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

func TestResumeAtTheOffset(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	body := png(40 << 10)
	loc := r.create("photo", len(body))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")

	if res := r.patch(loc, 0, body[:15000], false); res.StatusCode != 204 || res.Header.Get("Upload-Offset") != "15000" {
		t.Fatalf("first PATCH: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
	}
	if u, _ := r.st.Upload(context.Background(), id); u.Complete {
		t.Fatal("complete after part of the bytes")
	}
	// The connection dropped: the client asks where the upload stands.
	res := r.do("HEAD", loc, nil, nil)
	if res.StatusCode != 200 || res.Header.Get("Upload-Offset") != "15000" || res.Header.Get("Upload-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("HEAD: %d offset %q length %q", res.StatusCode, res.Header.Get("Upload-Offset"), res.Header.Get("Upload-Length"))
	}
	if res.Header.Get("Upload-Expires") == "" {
		t.Fatal("HEAD without Upload-Expires")
	}
	// A PATCH from the wrong offset is refused, and changes nothing.
	if res := r.patch(loc, 0, body, false); res.StatusCode != 409 || !strings.HasPrefix(problemCode(t, res), "upload-offset-mismatch") {
		t.Fatalf("PATCH at the wrong offset: %d", res.StatusCode)
	}
	// The rest, through POST with the method override (wx.request).
	if res := r.patch(loc, 15000, body[15000:], true); res.StatusCode != 204 || res.Header.Get("Upload-Offset") != strconv.Itoa(len(body)) {
		t.Fatalf("override PATCH: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
	}
	u, err := r.st.Upload(context.Background(), id)
	if err != nil || !u.Complete || u.SHA256 != sha256.Sum256(body) || u.Type != "image/png" || u.Name != "我的照片.png" || u.Field != "photo" {
		t.Fatalf("recorded upload %+v, %v", u, err)
	}
	got, err := os.ReadFile(kept(r.dir, id))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("stored bytes differ (%v)", err)
	}
	for _, p := range []string{filepath.Join(r.dir, id), filepath.Join(r.dir, id+".info")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("a complete upload's part %s stays: %v", filepath.Base(p), err)
		}
	}
	sum := sha256.Sum256(body)
	objectstest.WantPrivate(t, r.dir, kept(r.dir, id), filepath.Dir(kept(r.dir, id)), dirobjects.DirAt(r.dir).ContentPath(hex.EncodeToString(sum[:])),
		filepath.Join(r.dir, dirobjects.ObjectsDir, "sha256"))
	if o := r.decide("k1", "exam", "photo", id); o.Status != store.StatusStored {
		t.Fatalf("a submission naming a complete upload: %+v", o)
	}
}

func TestOptionsAnnounceExpiration(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	res := r.do("OPTIONS", "/v1/forms/exam/uploads", nil, nil)
	if ext := res.Header.Get("Tus-Extension"); !strings.Contains(ext, "creation") || !strings.Contains(ext, "termination") || !strings.Contains(ext, "expiration") {
		t.Fatalf("Tus-Extension %q", ext)
	}
	if res.Header.Get("Tus-Version") != "1.0.0" {
		t.Fatalf("Tus-Version %q", res.Header.Get("Tus-Version"))
	}
}

func TestCreationRefusals(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for name, tc := range map[string]struct {
		path, length, meta string
		status             int
		code               string
	}{
		"over max_size":    {"/v1/forms/exam/uploads", strconv.Itoa(64<<10 + 1), metadata("field", "photo"), 413, "payload-too-large: field photo takes files of at most 64KiB"},
		"no field":         {"/v1/forms/exam/uploads", "10", "", 422, "file-rejected"},
		"not a file field": {"/v1/forms/exam/uploads", "10", metadata("field", "name"), 422, "file-rejected"},
		"unknown form":     {"/v1/forms/nope/uploads", "10", metadata("field", "photo"), 404, "form-not-found"},
		"no length":        {"/v1/forms/exam/uploads", "", metadata("field", "photo"), 400, "invalid-request"},
	} {
		hdr := map[string]string{"Upload-Metadata": tc.meta}
		if tc.length != "" {
			hdr["Upload-Length"] = tc.length
		}
		res := r.do("POST", tc.path, hdr, nil)
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", name, res.StatusCode, tc.status)
			continue
		}
		if got := problemCode(t, res); !strings.HasPrefix(got, tc.code) {
			t.Errorf("%s: %q, want %q", name, got, tc.code)
		}
	}
	if ids, _ := r.st.ExpiredUploads(context.Background(), r.clock.Now().Add(100*time.Hour), 10); len(ids) != 0 {
		t.Fatalf("refused creations recorded uploads %v", ids)
	}
}

func TestBodyPastTheLengthIsCutOff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	loc := r.create("photo", 100)
	if res := r.patch(loc, 0, png(101), false); res.StatusCode != 413 || !strings.HasPrefix(problemCode(t, res), "payload-too-large") {
		t.Fatalf("PATCH past the length: %d", res.StatusCode)
	}
	if res := r.do("HEAD", loc, nil, nil); res.Header.Get("Upload-Offset") != "0" {
		t.Fatalf("offset after a refused PATCH: %q", res.Header.Get("Upload-Offset"))
	}
}

func TestBytesOfAnotherTypeAreRejected(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// A ".png" that is really an executable (an ELF header).
	exe := append([]byte("\x7fELF\x02\x01\x01"), bytes.Repeat([]byte{0}, 200)...)
	loc := r.create("photo", len(exe))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	res := r.patch(loc, 0, exe, false)
	if res.StatusCode != 422 {
		t.Fatalf("PATCH of an executable: %d", res.StatusCode)
	}
	if got := problemCode(t, res); got != "file-rejected: field photo does not accept this file: its bytes are application/octet-stream" {
		t.Fatalf("problem %q", got)
	}
	if _, err := r.st.Upload(context.Background(), id); err == nil {
		t.Fatal("a rejected upload stays recorded")
	}
	if !bytesGone(r.dir, id) {
		t.Fatalf("a rejected upload's bytes stay")
	}
}

func TestUploadOfAnotherFormIsNotFound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	other, _ := form.Parse([]byte("id: other\nfields: [{name: photo, type: file}]\n"), "")
	r.forms["other"] = other[0]
	loc := r.create("photo", 10)
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	if res := r.do("HEAD", "/v1/forms/other/uploads/"+id, nil, nil); res.StatusCode != 404 {
		t.Fatalf("HEAD through another form: %d", res.StatusCode)
	}
	if o := r.decide("k1", "other", "photo", id); o.Status != store.StatusUploadMissing || o.Detail != "upload-not-found:photo" {
		t.Fatalf("a submission to another form naming it: %+v", o)
	}
	if o := r.decide("k2", "exam", "photo", id); o.Status != store.StatusUploadMissing || o.Detail != "upload-incomplete:photo" {
		t.Fatalf("a submission naming an incomplete upload: %+v", o)
	}
}

func TestTermination(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	loc := r.create("photo", 10)
	if res := r.do("DELETE", loc, nil, nil); res.StatusCode != 204 {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}
	if res := r.do("HEAD", loc, nil, nil); res.StatusCode != 404 {
		t.Fatalf("HEAD after DELETE: %d", res.StatusCode)
	}
	// The deletion was queued with the record and done at once.
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	if ds, err := r.st.PendingDeletions(context.Background(), 10); err != nil || len(ds) != 0 || !bytesGone(r.dir, id) {
		t.Fatalf("after DELETE: deletions queued %+v, %v; bytes gone %v", ds, err, bytesGone(r.dir, id))
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	claimedLoc, unclaimedLoc := r.create("photo", 64), r.create("photo", 64)
	r.patch(claimedLoc, 0, png(64), false)
	r.patch(unclaimedLoc, 0, png(64), false)
	claimed := strings.TrimPrefix(claimedLoc, "/v1/forms/exam/uploads/")
	unclaimed := strings.TrimPrefix(unclaimedLoc, "/v1/forms/exam/uploads/")
	e := journal.Entry{ID: "e1", Seq: 1, Site: "default", Form: "exam", Key: "k1", ReceivedAt: r.clock.Now(),
		Data: []byte(`{"photo":"upload:` + claimed + `","_uploads":["` + claimed + `"]}`)}
	if out, err := r.st.Apply(ctx, []journal.Entry{e}); err != nil || out[0].Status != store.StatusStored {
		t.Fatalf("apply: %+v %v", out, err)
	}
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("expired before their time: %d %v", n, err)
	}
	r.clock.add(24*time.Hour + time.Second)
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d, %v; want the unclaimed one", n, err)
	}
	if !bytesGone(r.dir, unclaimed) {
		t.Fatalf("an expired upload's bytes stay")
	}
	if res := r.do("HEAD", unclaimedLoc, nil, nil); res.StatusCode != 404 {
		t.Fatalf("HEAD of an expired upload: %d", res.StatusCode)
	}
	if got, err := os.ReadFile(kept(r.dir, claimed)); err != nil || !bytes.Equal(got, png(64)) {
		t.Fatalf("a claimed upload's bytes went with the expiry: %v", err)
	}
	// Once the entry's data is erased (retention, forget), its file goes.
	if n, err := r.st.EraseEntries(ctx, []string{e.ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if n, err := r.svc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("erased %d, %v; want the erased entry's file", n, err)
	}
	if !bytesGone(r.dir, claimed) {
		t.Fatalf("an erased entry's file stays")
	}
}

// failingComplete is the store with CompleteUpload failing while fail is
// set: formd stopping between the last byte's fsync and its record.
type failingComplete struct {
	*sqlitestore.Store
	mu   sync.Mutex
	fail bool
}

func (f *failingComplete) CompleteUpload(ctx context.Context, id string, sum [32]byte, typ string) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail {
		return store.ErrUnavailable
	}
	return f.Store.CompleteUpload(ctx, id, sum, typ)
}

// An upload whose bytes are all on disk but whose completion was never
// recorded is completed when a submission names it, with the digest of
// the bytes on disk.
func TestCompletionRecordedLater(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fc := &failingComplete{Store: r.st, fail: true}
	svc, err := New(fc, r.forms, Config{Dir: r.dir, Expiry: time.Hour, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	r.srv.Config.Handler = mux
	body := png(3000)
	loc := r.create("photo", len(body))
	id := strings.TrimPrefix(loc, "/v1/forms/exam/uploads/")
	if res := r.patch(loc, 0, body, false); res.StatusCode != 503 {
		t.Fatalf("PATCH whose completion cannot be recorded: %d", res.StatusCode)
	}
	if u, _ := r.st.Upload(context.Background(), id); u.Complete {
		t.Fatal("complete without its record")
	}
	fc.mu.Lock()
	fc.fail = false
	fc.mu.Unlock()
	// The client asks where its upload stands: HEAD completes it.
	if res := r.do("HEAD", loc, nil, nil); res.StatusCode != 200 || res.Header.Get("Upload-Offset") != strconv.Itoa(len(body)) {
		t.Fatalf("HEAD: %d offset %q", res.StatusCode, res.Header.Get("Upload-Offset"))
	}
	if u, _ := r.st.Upload(context.Background(), id); !u.Complete || u.SHA256 != sha256.Sum256(body) || u.Type != "image/png" {
		t.Fatalf("completed later: %+v", u)
	}
}

// Browser pages of the form's origins may upload (CORS); others are
// refused before anything is stored.
func TestUploadOrigins(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	f, _ := form.Parse([]byte(photoForm+"origins: [https://exam.example.org]\n"), "")
	r.forms["exam"] = f[0]
	pre := r.do("OPTIONS", "/v1/forms/exam/uploads/0123456789abcdef0123456789abcdef", map[string]string{
		"Origin": "https://exam.example.org", "Access-Control-Request-Method": "PATCH"}, nil)
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://exam.example.org" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Upload-Offset") || !strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "PATCH") {
		t.Fatalf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	res := r.do("POST", "/v1/forms/exam/uploads", map[string]string{"Origin": "https://exam.example.org",
		"Upload-Length": "10", "Upload-Metadata": metadata("field", "photo")}, nil)
	if res.StatusCode != 201 || !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Location") {
		t.Fatalf("creation from the form's origin: %d %v", res.StatusCode, res.Header)
	}
	res = r.do("POST", "/v1/forms/exam/uploads", map[string]string{"Origin": "https://evil.example",
		"Upload-Length": "10", "Upload-Metadata": metadata("field", "photo")}, nil)
	if res.StatusCode != 403 || !strings.HasPrefix(problemCode(t, res), "origin-not-allowed") {
		t.Fatalf("creation from another origin: %d", res.StatusCode)
	}
	// The refusal is readable by the refused page (issue 34): its
	// preflight passes, the 403 carries Access-Control-Allow-Origin, and
	// nothing of an upload is exposed or answered.
	if res.Header.Get("Access-Control-Allow-Origin") != "https://evil.example" || res.Header.Get("Access-Control-Expose-Headers") != "" || res.Header.Get("Location") != "" {
		t.Errorf("the refusal's headers: %v", res.Header)
	}
	pre = r.do("OPTIONS", "/v1/forms/exam/uploads", map[string]string{
		"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, nil)
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://evil.example" {
		t.Errorf("preflight from another origin: %d %v", pre.StatusCode, pre.Header)
	}
	res = r.do("HEAD", "/v1/forms/exam/uploads/0123456789abcdef0123456789abcdef", map[string]string{"Origin": "https://evil.example", "Tus-Resumable": "1.0.0"}, nil)
	if res.StatusCode != 403 || res.Header.Get("Upload-Offset") != "" || res.Header.Get("Upload-Expires") != "" {
		t.Errorf("HEAD from another origin: %d %v", res.StatusCode, res.Header)
	}
}

// A tus request that lacks a header the protocol needs is told which
// (issue 34), not a bare invalid-request.
func TestMissingTusHeadersAreNamed(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	loc := r.create("photo", 4)
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		want               string
	}{
		{"creation without Upload-Length", "POST", "/v1/forms/exam/uploads", map[string]string{"Upload-Metadata": metadata("field", "photo")}, "Upload-Length"},
		{"creation without Tus-Resumable", "POST", "/v1/forms/exam/uploads", map[string]string{"Tus-Resumable": "", "Upload-Length": "4", "Upload-Metadata": metadata("field", "photo")}, "Tus-Resumable: 1.0.0"},
		{"a chunk without Tus-Resumable", "PATCH", loc, map[string]string{"Tus-Resumable": "", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream"}, "Tus-Resumable: 1.0.0"},
		{"a chunk without Upload-Offset", "PATCH", loc, map[string]string{"Content-Type": "application/offset+octet-stream"}, "Upload-Offset"},
	}
	for _, tc := range tests {
		res := r.do(tc.method, tc.path, tc.hdr, []byte("abcd"))
		got := problemCode(t, res)
		if res.StatusCode < 400 || res.StatusCode >= 500 || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %d %q, want the problem to name %s", tc.name, res.StatusCode, got, tc.want)
		}
	}
}
