package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const tusScenarioForms = `
id: exam
fields:
  - {name: name,  type: text, required: true}
  - {name: photo, type: file, required: true, max_size: 1MiB, accept: [image/png, image/jpeg]}
---
id: other
fields:
  - {name: photo, type: file, max_size: 1MiB}
`

// tusMeta is an Upload-Metadata header of a field and a file name.
func tusMeta(field, filename string) string {
	return "field " + base64.StdEncoding.EncodeToString([]byte(field)) + ",filename " + base64.StdEncoding.EncodeToString([]byte(filename))
}

// TestTusScenarios covers the answers of the tus endpoints
// (/v1/forms/{form}/uploads) in order, as a client meets them: creation
// and its refusals, the offset asked with HEAD, PATCHes in and out of
// place, the upload under another form, and the submission that claims
// the upload, once.
func TestTusScenarios(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, tusScenarioForms, servertest.Options{})
	photo := photoBytes(64<<10, 3)
	half := len(photo) / 2
	size := strconv.Itoa(len(photo))
	tus := map[string]string{"Tus-Resumable": "1.0.0"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"Tus-Resumable": "1.0.0"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	var loc, partLoc, textLoc string // the upload made below, and a second one left half-sent
	keep := func(into *string) func(*testing.T, *http.Response, []byte) {
		return func(t *testing.T, resp *http.Response, _ []byte) {
			l := resp.Header.Get("Location")
			if !strings.HasPrefix(l, "/v1/forms/exam/uploads/") {
				t.Fatalf("Location %q, want the upload under its form", l)
			}
			*into = l
		}
	}
	naming := func(upload *string) func() []byte {
		return func() []byte {
			b, _ := json.Marshal(map[string]any{"name": "Li Lei", "photo": "upload:" + (*upload)[strings.LastIndexByte(*upload, '/')+1:]})
			return b
		}
	}
	octets := func(offset string) map[string]string {
		return with("Content-Type", "application/offset+octet-stream", "Upload-Offset", offset)
	}
	h.RunScenarios(t, []servertest.Scenario{
		{Name: "OPTIONS says the protocol and extensions", Method: "OPTIONS", URL: "/v1/forms/exam/uploads", Headers: tus,
			ExpectedStatus: 200, ExpectedHeaders: map[string]string{"Tus-Version": "1.0.0", "Tus-Extension": "", "Tus-Max-Size": ""},
			Check: func(t *testing.T, resp *http.Response, _ []byte) {
				if ext := resp.Header.Get("Tus-Extension"); !strings.Contains(ext, "creation") || !strings.Contains(ext, "expiration") {
					t.Errorf("Tus-Extension %q, want creation and expiration", ext)
				}
			}},
		{Name: "404 form-not-found for a form that does not exist", Method: "POST", URL: "/v1/forms/nope/uploads",
			Headers: with("Upload-Length", size, "Upload-Metadata", tusMeta("photo", "p.jpg")), ExpectedStatus: 404, ExpectedCode: problem.CodeFormNotFound},
		{Name: "422 file-rejected for a field that takes no files", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: with("Upload-Length", size, "Upload-Metadata", tusMeta("name", "p.jpg")), ExpectedStatus: 422, ExpectedCode: problem.CodeFileRejected,
			ExpectedContent: []string{"not a file field"}},
		{Name: "413 payload-too-large for a length above the field's max_size", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: with("Upload-Length", strconv.Itoa(2<<20), "Upload-Metadata", tusMeta("photo", "p.jpg")), ExpectedStatus: 413, ExpectedCode: problem.CodePayloadTooLarge},
		{Name: "412 without Tus-Resumable", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: map[string]string{"Upload-Length": size, "Upload-Metadata": tusMeta("photo", "p.jpg")}, ExpectedStatus: 412, ExpectedCode: problem.CodeInvalidRequest},
		{Name: "201 created, under its form, with its expiry", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: with("Upload-Length", size, "Upload-Metadata", tusMeta("photo", "photo.jpg")), ExpectedStatus: 201,
			ExpectedHeaders: map[string]string{"Location": "", "Upload-Expires": "", "Tus-Resumable": "1.0.0"}, Check: keep(&loc)},
		{Name: "HEAD: nothing received yet", Method: "HEAD", URLOf: func() string { return loc }, Headers: tus, ExpectedStatus: 200,
			ExpectedHeaders: map[string]string{"Upload-Offset": "0", "Upload-Length": size, "Cache-Control": "no-store"}},
		{Name: "409 upload-offset-mismatch for bytes sent from the wrong offset", Method: "PATCH", URLOf: func() string { return loc },
			Headers: octets("100"), Body: photo[100:200], ExpectedStatus: 409, ExpectedCode: problem.CodeUploadOffset},
		{Name: "400 invalid-request for a PATCH that is not offset+octet-stream (tusd's answer)", Method: "PATCH", URLOf: func() string { return loc },
			Headers: with("Content-Type", "application/json", "Upload-Offset", "0"), Body: photo[:half], ExpectedStatus: 400, ExpectedCode: problem.CodeInvalidRequest},
		{Name: "204 the first half", Method: "PATCH", URLOf: func() string { return loc }, Headers: octets("0"), Body: photo[:half],
			ExpectedStatus: 204, ExpectedHeaders: map[string]string{"Upload-Offset": strconv.Itoa(half)}},
		{Name: "HEAD: where to go on from", Method: "HEAD", URLOf: func() string { return loc }, Headers: tus, ExpectedStatus: 200,
			ExpectedHeaders: map[string]string{"Upload-Offset": strconv.Itoa(half)}},
		{Name: "404 upload-not-found for the upload under another form", Method: "PATCH",
			URLOf: func() string { return strings.Replace(loc, "/forms/exam/", "/forms/other/", 1) }, Headers: octets(strconv.Itoa(half)), Body: photo[half:],
			ExpectedStatus: 404, ExpectedCode: problem.CodeUploadNotFound},
		{Name: "204 the rest", Method: "PATCH", URLOf: func() string { return loc }, Headers: octets(strconv.Itoa(half)), Body: photo[half:],
			ExpectedStatus: 204, ExpectedHeaders: map[string]string{"Upload-Offset": size}},
		{Name: "404 upload-not-found for an upload that does not exist", Method: "PATCH", URL: "/v1/forms/exam/uploads/nosuchupload",
			Headers: octets("0"), Body: photo[:10], ExpectedStatus: 404, ExpectedCode: problem.CodeUploadNotFound},
		{Name: "HEAD of an upload that does not exist: 404", Method: "HEAD", URL: "/v1/forms/exam/uploads/nosuchupload", Headers: tus, ExpectedStatus: 404},
		{Name: "an upload of 16 bytes that will not be a photo", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: with("Upload-Length", "16", "Upload-Metadata", tusMeta("photo", "notes.txt")), ExpectedStatus: 201, Check: keep(&textLoc)},
		{Name: "413 payload-too-large for a body past the declared length", Method: "PATCH", URLOf: func() string { return textLoc },
			Headers: octets("0"), Body: []byte("twenty bytes of txt!"), ExpectedStatus: 413, ExpectedCode: problem.CodePayloadTooLarge},
		{Name: "422 file-rejected for bytes of a type the field does not accept, naming the type", Method: "PATCH", URLOf: func() string { return textLoc },
			Headers: octets("0"), Body: []byte("sixteen bytes ok"), ExpectedStatus: 422, ExpectedCode: problem.CodeFileRejected,
			ExpectedContent: []string{"photo", "text/plain"}},
		{Name: "the rejected upload is gone", Method: "HEAD", URLOf: func() string { return textLoc }, Headers: tus, ExpectedStatus: 404},
		{Name: "a second upload, left half-sent", Method: "POST", URL: "/v1/forms/exam/uploads",
			Headers: with("Upload-Length", size, "Upload-Metadata", tusMeta("photo", "half.jpg")), ExpectedStatus: 201, Check: keep(&partLoc)},
		{Name: "422 validation-failed, upload-incomplete, for a submission naming the half-sent upload", Method: "POST", URL: "/v1/forms/exam/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-half"},
			BodyOf:  naming(&partLoc), ExpectedStatus: 422, ExpectedCode: problem.CodeValidationFailed,
			ExpectedContent: []string{`"field":"photo","code":"upload-incomplete"`}},
		{Name: "422 validation-failed, upload-not-found, for a submission naming an upload of another form", Method: "POST", URL: "/v1/forms/other/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-other"}, BodyOf: func() []byte {
				return []byte(`{"photo":"upload:` + loc[strings.LastIndexByte(loc, '/')+1:] + `"}`)
			}, ExpectedStatus: 422, ExpectedCode: problem.CodeValidationFailed, ExpectedContent: []string{`"code":"upload-not-found"`}},
		{Name: "201 the submission that claims the complete upload", Method: "POST", URL: "/v1/forms/exam/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-1"}, BodyOf: naming(&loc), ExpectedStatus: 201,
			ExpectedContent: []string{`"status":"stored"`}},
		{Name: "200 the same key again: the first answer, replayed", Method: "POST", URL: "/v1/forms/exam/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-1"}, BodyOf: naming(&loc), ExpectedStatus: 200,
			ExpectedHeaders: map[string]string{"Idempotent-Replayed": "true"}},
		{Name: "422 upload-already-used for another submission naming it", Method: "POST", URL: "/v1/forms/exam/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-2"}, BodyOf: naming(&loc), ExpectedStatus: 422, ExpectedCode: problem.CodeUploadUsed},
	})
}
