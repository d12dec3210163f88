package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/uploads/dirobjects"
)

const uploadForms = `
id: exam
fields:
  - {name: name,  type: text, required: true}
  - {name: photo, type: file, required: true, max_size: 1MiB, accept: [image/png, image/jpeg]}
`

// photoBytes are n bytes that sniff as a JPEG photo, different for each
// seed.
func photoBytes(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + seed*7 + i/251)
	}
	copy(b, "\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	return b
}

func tusDo(t *testing.T, c *http.Client, method, url string, hdr map[string]string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Tus-Resumable", "1.0.0")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return sendAndDrain(t, c, req)
}

// sendAndDrain sends req with c and returns the answer, its body read and
// closed.
func sendAndDrain(t *testing.T, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// upload sends the bytes over tus in two PATCHes, asking for the offset
// with HEAD in between as a client does after a drop, and returns the id.
func upload(t *testing.T, h *servertest.Harness, body []byte) string {
	t.Helper()
	c := servertest.Client()
	meta := "field " + base64.StdEncoding.EncodeToString([]byte("photo")) + ",filename " + base64.StdEncoding.EncodeToString([]byte("photo.jpg"))
	res := tusDo(t, c, "POST", h.URL+"/v1/forms/exam/uploads", map[string]string{"Upload-Length": strconv.Itoa(len(body)), "Upload-Metadata": meta}, nil)
	if res.StatusCode != 201 {
		t.Fatalf("create: %d", res.StatusCode)
	}
	loc := h.URL + res.Header.Get("Location")
	half := len(body) / 2
	octets := map[string]string{"Content-Type": "application/offset+octet-stream"}
	octets["Upload-Offset"] = "0"
	if res := tusDo(t, c, "PATCH", loc, octets, body[:half]); res.StatusCode != 204 {
		t.Fatalf("first half: %d", res.StatusCode)
	}
	res = tusDo(t, c, "HEAD", loc, nil, nil)
	if res.Header.Get("Upload-Offset") != strconv.Itoa(half) {
		t.Fatalf("HEAD offset %q, want %d", res.Header.Get("Upload-Offset"), half)
	}
	octets["Upload-Offset"] = res.Header.Get("Upload-Offset")
	if res := tusDo(t, c, "PATCH", loc, octets, body[half:]); res.StatusCode != 204 {
		t.Fatalf("second half: %d", res.StatusCode)
	}
	return loc[strings.LastIndexByte(loc, '/')+1:]
}

type submitted struct {
	status int
	code   string
	id     string
	body   []byte
	replay string
}

func submitWithPhoto(t *testing.T, h *servertest.Harness, key, name, uploadID string) submitted {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "photo": "upload:" + uploadID})
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/exam/submissions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := servertest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc struct{ ID, Code string }
	json.Unmarshal(b, &doc)
	return submitted{status: res.StatusCode, code: doc.Code, id: doc.ID, body: b, replay: res.Header.Get("Idempotent-Replayed")}
}

// TestUploadsExactlyOnce: an upload is attached to one entry only, a
// retry of the key gets the same entry and file, and after a restart the
// acknowledged entry's file is byte for byte what was sent. On both
// paths of the embedded drivers.
func TestUploadsExactlyOnce(t *testing.T) {
	for _, atAppend := range []bool{true, false} {
		t.Run(fmt.Sprintf("decide-at-append=%v", atAppend), func(t *testing.T) {
			t.Parallel()
			opts := servertest.Options{Config: func(c *config.Config) { c.DecideAtAppend = atAppend }}
			h := servertest.Start(t, uploadForms, opts)
			photo := photoBytes(300<<10, 1)
			id := upload(t, h, photo)

			first := submitWithPhoto(t, h, "k1", "Li Lei", id)
			if first.status != 201 {
				t.Fatalf("first submission: %d %s", first.status, first.body)
			}
			again := submitWithPhoto(t, h, "k1", "Li Lei", id)
			if again.status != 200 || again.replay != "true" || !bytes.Equal(again.body, first.body) {
				t.Fatalf("retry of the key: %d %s (replayed %q)", again.status, again.body, again.replay)
			}
			if other := submitWithPhoto(t, h, "k2", "Han Meimei", id); other.status != 422 || other.code != "upload-already-used" {
				t.Fatalf("another submission naming the upload: %d %s", other.status, other.body)
			}

			// Two new submissions name one fresh upload at once: one wins.
			contested := upload(t, h, photoBytes(10<<10, 2))
			var wg sync.WaitGroup
			answers := make([]submitted, 2)
			for i := range answers {
				wg.Go(func() {
					answers[i] = submitWithPhoto(t, h, fmt.Sprintf("race-%d", i), fmt.Sprintf("racer %d", i), contested)
				})
			}
			wg.Wait()
			won, lost := 0, 0
			for _, a := range answers {
				switch {
				case a.status == 201:
					won++
				case a.status == 422 && a.code == "upload-already-used":
					lost++
				default:
					t.Fatalf("racing submission: %d %s", a.status, a.body)
				}
			}
			if won != 1 || lost != 1 {
				t.Fatalf("%d won and %d lost the race for one upload", won, lost)
			}
			// The loser's retry is the loser's answer, not a second chance.
			for i, a := range answers {
				if a.status == 422 {
					if r := submitWithPhoto(t, h, fmt.Sprintf("race-%d", i), fmt.Sprintf("racer %d", i), contested); r.status != 422 || r.code != "upload-already-used" {
						t.Fatalf("retry of the losing key: %d %s", r.status, r.body)
					}
				}
			}

			// After a restart on the same files the entry has its file,
			// byte for byte.
			h.Stop()
			// A restart issues no new admin token: the first one stays.
			token := h.Token
			h = servertest.Start(t, uploadForms, servertest.Options{Data: h.Data, Config: opts.Config})
			h.Token = token
			ctx := context.Background()
			files, err := h.Server.Store.EntryUploads(ctx, first.id)
			if err != nil || len(files) != 1 || files[0].ID != id {
				t.Fatalf("the entry's files after a restart: %+v %v", files, err)
			}
			if files[0].SHA256 != sha256.Sum256(photo) || files[0].Type != "image/jpeg" || files[0].Size != int64(len(photo)) {
				t.Fatalf("recorded file %+v", files[0])
			}
			f, err := h.Server.Uploads.Open(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sum := sha256.New()
			if _, err := io.Copy(sum, f); err != nil {
				t.Fatal(err)
			}
			if got := [32]byte(sum.Sum(nil)); got != sha256.Sum256(photo) {
				t.Fatal("the stored bytes are not the bytes sent")
			}
			if u, err := h.Server.Store.Upload(ctx, id); err != nil || u.Entry != first.id {
				t.Fatalf("upload claimed by %q (%v), want %s", u.Entry, err, first.id)
			}
			checkExportAndDownload(t, h, first.id, photo)
		})
	}
}

// TestSubmissionUploadValidation: a reference to nothing, to an upload
// still being sent, or to more files than the field takes is a
// validation failure with a code per field, and nothing is journaled.
func TestSubmissionUploadValidation(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, uploadForms, servertest.Options{})
	c := servertest.Client()
	meta := "field " + base64.StdEncoding.EncodeToString([]byte("photo"))
	res := tusDo(t, c, "POST", h.URL+"/v1/forms/exam/uploads", map[string]string{"Upload-Length": "100", "Upload-Metadata": meta}, nil)
	incomplete := res.Header.Get("Location")
	incomplete = incomplete[strings.LastIndexByte(incomplete, '/')+1:]
	for name, tc := range map[string]struct{ id, code string }{
		"unknown":    {"0123456789abcdef0123456789abcdef", "upload-not-found"},
		"incomplete": {incomplete, "upload-incomplete"},
	} {
		a := submitWithPhoto(t, h, "v-"+name, "Li", tc.id)
		var p struct {
			Code   string
			Errors []struct{ Field, Code string }
		}
		json.Unmarshal(a.body, &p)
		if a.status != 422 || p.Code != "validation-failed" || len(p.Errors) != 1 || p.Errors[0].Field != "photo" || p.Errors[0].Code != tc.code {
			t.Errorf("%s upload: %d %s", name, a.status, a.body)
		}
	}
}

// checkExportAndDownload reads the form's JSONL export as the owner and
// downloads the entry's photo through the signed link it carries.
func checkExportAndDownload(t *testing.T, h *servertest.Harness, entryID string, photo []byte) {
	t.Helper()
	c := servertest.Client()
	var file struct {
		Name, Type, SHA256, URL string
		Size                    int64
	}
	for _, row := range examExport(t, h) {
		if _, ok := row.Data["_uploads"]; ok {
			t.Fatalf("the export shows the internal list of uploads: %v", row.Data)
		}
		if row.ID == entryID {
			if err := json.Unmarshal(row.Data["photo"], &file); err != nil {
				t.Fatalf("photo in the export: %s: %v", row.Data["photo"], err)
			}
		}
	}
	sum := sha256.Sum256(photo)
	if file.Name != "photo.jpg" || file.Type != "image/jpeg" || file.Size != int64(len(photo)) || file.SHA256 != fmt.Sprintf("%x", sum) || !strings.HasPrefix(file.URL, "/v1/files/"+entryID+"/") {
		t.Fatalf("exported file %+v", file)
	}
	dl, err := c.Get(h.URL + file.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if dl.StatusCode != 200 || !bytes.Equal(got, photo) {
		t.Fatalf("download: %d, %d bytes", dl.StatusCode, len(got))
	}
	if cd := dl.Header.Get("Content-Disposition"); cd != `attachment; filename="photo.jpg"; filename*=UTF-8''photo.jpg` {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if dl.Header.Get("X-Content-Type-Options") != "nosniff" || dl.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("download headers %v", dl.Header)
	}
	// A link whose signature or expiry was changed opens nothing.
	tampered := strings.Replace(file.URL, "exp=", "exp=9", 1)
	if r, err := c.Get(h.URL + tampered); err != nil || r.StatusCode != 403 {
		t.Fatalf("tampered link: %v %v", r.StatusCode, err)
	} else {
		r.Body.Close()
	}
}

func multipartPost(t *testing.T, h *servertest.Harness, key string, photo []byte) *http.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("_key", key)
	mw.WriteField("name", "Li Lei")
	fw, _ := mw.CreateFormFile("photo", "证件照.jpg")
	fw.Write(photo)
	mw.Close()
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/exam/submissions", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "text/html")
	c := servertest.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return sendAndDrain(t, c, req)
}

// TestPlainPostWithAFile: the hosted page without JavaScript posts
// multipart/form-data with the file; the server streams it to the upload
// store (a body far over --max-body is fine when the file is within its
// field's max_size) and submits it; the same post sent again is the same
// submission with the same file.
func TestPlainPostWithAFile(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, uploadForms, servertest.Options{Config: func(c *config.Config) { c.MaxBody = 64 << 10 }})
	photo := photoBytes(300<<10, 3)
	for range 2 {
		if res := multipartPost(t, h, "html-1", photo); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("plain post with a photo: %d", res.StatusCode)
		}
	}
	ctx := context.Background()
	o, ok, err := h.Server.Store.Outcome(ctx, "exam", "html-1")
	if err != nil || !ok || o.Status != "stored" {
		t.Fatalf("outcome %+v %v %v", o, ok, err)
	}
	files, err := h.Server.Store.EntryUploads(ctx, o.ID)
	if err != nil || len(files) != 1 || files[0].SHA256 != sha256.Sum256(photo) || files[0].Name != "证件照.jpg" {
		t.Fatalf("the entry's files: %+v %v", files, err)
	}
	// A file over the field's max_size, and one of a type it does not take.
	if res := multipartPost(t, h, "html-2", photoBytes(1<<20+1, 4)); res.StatusCode != 413 {
		t.Fatalf("a file over max_size: %d", res.StatusCode)
	}
	if res := multipartPost(t, h, "html-3", []byte("%PDF-1.7 not a photo")); res.StatusCode != 422 {
		t.Fatalf("a PDF for a photo field: %d", res.StatusCode)
	}
}

// TestWebhookCarriesTheFile: the stored event's body gives the photo as
// {name, type, size, sha256, url}, and the link downloads it.
func TestWebhookCarriesTheFile(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer recv.Close()
	forms := uploadForms + fmt.Sprintf("notify:\n  webhooks: [{url: %q, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]\n", recv.URL)
	h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) {
		c.WebhookAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}})
	photo := photoBytes(20<<10, 5)
	if a := submitWithPhoto(t, h, "wh-1", "Li Lei", upload(t, h, photo)); a.status != 201 {
		t.Fatalf("submission: %d %s", a.status, a.body)
	}
	var body []byte
	poll.Until(t, "the stored event's webhook", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) > 0 {
			body = bodies[0]
		}
		return body != nil
	})
	var ev struct {
		Data struct {
			Data map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	var file struct{ Name, Type, SHA256, URL string }
	if err := json.Unmarshal(ev.Data.Data["photo"], &file); err != nil || file.SHA256 != fmt.Sprintf("%x", sha256.Sum256(photo)) || file.Type != "image/jpeg" {
		t.Fatalf("photo in the webhook body: %s (%v)", ev.Data.Data["photo"], err)
	}
	if _, ok := ev.Data.Data["_uploads"]; ok {
		t.Fatalf("the webhook body shows the internal list of uploads: %s", body)
	}
	res, err := servertest.Client().Get(h.URL + file.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(got, photo) {
		t.Fatalf("download from the webhook's link: %d", res.StatusCode)
	}
}

const forgetForms = `
id: exam
fields:
  - {name: email, type: email, required: true}
  - {name: photo, type: file, required: true, max_size: 1MiB, accept: [image/png, image/jpeg]}
`

// examRow is an entry of the exam form as the JSONL export gives it.
type examRow struct {
	ID   string
	Data map[string]json.RawMessage
}

// examExport is the exam form's JSONL export, through the admin API.
func examExport(t *testing.T, h *servertest.Harness) []examRow {
	t.Helper()
	req, _ := http.NewRequest("GET", h.URL+"/v1/admin/forms/exam/export?format=jsonl", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	res, err := servertest.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("export: %d", res.StatusCode)
	}
	var rows []examRow
	dec := json.NewDecoder(res.Body)
	for dec.More() {
		var row examRow
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows
}

// exportedFileURL is the signed link the export gives an entry's photo.
func exportedFileURL(t *testing.T, h *servertest.Harness, entryID string) string {
	t.Helper()
	for _, row := range examExport(t, h) {
		var file struct{ URL string }
		if row.ID == entryID && json.Unmarshal(row.Data["photo"], &file) == nil && file.URL != "" {
			return file.URL
		}
	}
	t.Fatalf("the export has no photo link for %s", entryID)
	return ""
}

// After POST /v1/admin/forget answers (formd forget), the forgotten
// person's photo link answers 410 at once, though it is signed and not
// expired and the bytes are still under --data; the uploads pass deletes
// the bytes, after which the link answers 404. Another person's photo is
// served throughout.
func TestForgottenPhotoIsNotServed(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forgetForms, servertest.Options{})
	c := servertest.Client()
	send := func(key, email string) (string, string) {
		t.Helper()
		id := upload(t, h, photoBytes(20<<10, len(key)))
		body, _ := json.Marshal(map[string]any{"email": email, "photo": "upload:" + id})
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/exam/submissions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc struct{ ID string }
		json.NewDecoder(res.Body).Decode(&doc)
		if res.StatusCode != 201 || doc.ID == "" {
			t.Fatalf("submit: %d", res.StatusCode)
		}
		return doc.ID, id
	}
	status := func(link string) int {
		t.Helper()
		res, err := c.Get(h.URL + link)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	goneEntry, goneUpload := send("k-forget", "han.meimei@example.org")
	onDisk := func() bool {
		t.Helper()
		ok, err := dirobjects.DirBytes(filepath.Join(h.Data, "uploads")).HasBytes(context.Background(), goneUpload)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	keptEntry, _ := send("k-keep-me", "li.lei@example.org")
	goneLink, keptLink := exportedFileURL(t, h, goneEntry), exportedFileURL(t, h, keptEntry)
	if s := status(goneLink); s != 200 {
		t.Fatalf("the photo before forget: %d", s)
	}
	type report struct{ Erased, Files int }
	forget := func(body string) report {
		t.Helper()
		req, _ := http.NewRequest("POST", h.URL+"/v1/admin/forget", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.Token)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var rep report
		if err := json.NewDecoder(res.Body).Decode(&rep); err != nil || res.StatusCode != 200 {
			t.Fatalf("forget %s: %d %v", body, res.StatusCode, err)
		}
		return rep
	}
	if rep := forget(`{"email": "Han.Meimei@example.org", "dry_run": true}`); rep != (report{Erased: 0, Files: 1}) || status(goneLink) != 200 {
		t.Fatalf("forget, dry run: %+v (the photo answers %d)", rep, status(goneLink))
	}
	if rep := forget(`{"email": "Han.Meimei@example.org"}`); rep != (report{Erased: 1, Files: 1}) {
		t.Fatalf("forget: %+v, want one entry and its file", rep)
	}
	if s := status(goneLink); s != http.StatusGone || !onDisk() {
		t.Fatalf("the forgotten person's photo right after forget answered: %d (bytes still stored: %v), want 410 while they are", s, onDisk())
	}
	if s := status(keptLink); s != 200 {
		t.Fatalf("another person's photo after forget: %d", s)
	}
	if _, err := h.Server.Uploads.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := status(goneLink); s != http.StatusNotFound || onDisk() {
		t.Fatalf("the forgotten photo after the pass: %d (bytes still stored: %v), want 404 and no bytes", s, onDisk())
	}
	if s := status(keptLink); s != 200 {
		t.Fatalf("another person's photo after the pass: %d", s)
	}
}
