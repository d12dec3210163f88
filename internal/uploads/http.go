package uploads

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/uploads/tier"
)

// problemType is the media type of every error answer.
const problemType = "application/problem+json"

// writeProblem answers with p, at status when it is not 0 (a tus answer
// whose status the protocol fixes, such as 404 for an unknown upload).
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem.Problem, status int) {
	if status != 0 {
		p.Status = status
	}
	h := w.Header()
	h.Set("Tus-Resumable", "1.0.0")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	h.Set("Content-Type", problemType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		w.Write(p.Body())
	}
}

// tusProblem is p as the error a tusd hook returns (tier.TusProblem).
var tusProblem = tier.TusProblem

// tusCodes maps tusd's own error answers to problem codes.
func tusCode(status int) string {
	switch status {
	case http.StatusConflict:
		return problem.CodeUploadOffset
	case http.StatusNotFound, http.StatusGone:
		return problem.CodeUploadNotFound
	case http.StatusRequestEntityTooLarge:
		return problem.CodePayloadTooLarge
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage:
		return problem.CodeUploadUnavailable
	case http.StatusMethodNotAllowed:
		return problem.CodeMethodNotAllowed
	case http.StatusForbidden, http.StatusLocked, http.StatusBadRequest, http.StatusPreconditionFailed, http.StatusUnsupportedMediaType, http.StatusNotImplemented:
		return problem.CodeInvalidRequest
	}
	return problem.CodeInternal
}

// missingHeader says which tus header a refused request lacks (issue 34:
// a bare invalid-request cost an afternoon), or "" when it lacks none.
func missingHeader(r *http.Request, code int) string {
	method := r.Method
	if o := r.Header.Get("X-HTTP-Method-Override"); o != "" {
		method = strings.ToUpper(o)
	}
	switch {
	case method == http.MethodOptions:
		return ""
	case r.Header.Get("Tus-Resumable") == "" && (code == http.StatusPreconditionFailed || code == http.StatusBadRequest):
		return "send the header Tus-Resumable: 1.0.0 (the tus protocol's version) with every request but OPTIONS"
	case code == http.StatusPreconditionFailed:
		return "Tus-Resumable must be 1.0.0, the tus version formd speaks"
	case method == http.MethodPost && code == http.StatusBadRequest && r.Header.Get("Upload-Length") == "" && r.Header.Get("Upload-Defer-Length") == "":
		return "send the file's size in bytes in the header Upload-Length"
	case method == http.MethodPatch && code == http.StatusBadRequest && r.Header.Get("Upload-Offset") == "":
		return "send the header Upload-Offset: the offset HEAD gives"
	case method == http.MethodPatch && code == http.StatusUnsupportedMediaType:
		return "send the bytes with Content-Type: application/offset+octet-stream"
	}
	return ""
}

// rewriter adapts tusd's answers to formd's API: Location names the
// upload under its form, the expiration extension is announced (formd
// sends Upload-Expires), and tusd's plain-text errors become problem
// documents with a stable code.
type rewriter struct {
	http.ResponseWriter
	r       *http.Request
	base    string
	swallow bool
	wrote   bool
	// pending is the status of a tusd error whose answer waits for its
	// text; text is that text.
	pending int
	text    bytes.Buffer
}

func (w *rewriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	h := w.Header()
	if loc := h.Get("Location"); loc != "" {
		if i := strings.LastIndex(loc, "/v1/uploads/"); i >= 0 {
			h.Set("Location", w.base+loc[i+len("/v1/uploads/"):])
		}
	}
	if ext := h.Get("Tus-Extension"); ext != "" && !strings.Contains(ext, "expiration") {
		h.Set("Tus-Extension", ext+",expiration")
	}
	if code >= 400 && !strings.HasPrefix(h.Get("Content-Type"), problemType) {
		// tusd's own error: its text (ERR_…: what) comes in the body, so
		// the answer waits for it (finish).
		w.pending, w.swallow = code, true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// finish writes the problem document of a tusd error, once its text is
// known: what went wrong and what to do, in tus's terms.
func (w *rewriter) finish() {
	if w.pending == 0 {
		return
	}
	code, msg := w.pending, w.text.String()
	w.pending = 0
	h := w.Header()
	detail := missingHeader(w.r, code)
	if detail == "" {
		detail = tusDetail(code, msg)
	}
	p := problem.New(tusCode(code), detail)
	if code == http.StatusNotImplemented {
		// A tus feature this server does not take: the request's fault,
		// not formd's.
		code = http.StatusBadRequest
	}
	p.Status = code
	body := p.Body()
	h.Set("Content-Type", problemType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.ResponseWriter.WriteHeader(code)
	if w.r.Method != http.MethodHead {
		w.ResponseWriter.Write(body)
	}
}

// tusDetail says what a tusd error means for a tus client (tusd's error
// text starts with its ERR_ code).
func tusDetail(code int, msg string) string {
	switch {
	case code == http.StatusNotImplemented || strings.Contains(msg, "ERR_NOT_IMPLEMENTED"):
		return "this server does not take that tus feature: its Tus-Extension header lists the ones it does (creation, creation-with-upload, termination, expiration; not creation-defer-length nor concatenation): send the file's length in Upload-Length"
	case strings.Contains(msg, "ERR_UPLOAD_INTERRUPTED"):
		return "another request for this upload took it over (ERR_UPLOAD_INTERRUPTED: a newer PATCH, or a DELETE): this one stopped; ask with HEAD for the Upload-Offset and send from there from one request at a time"
	case strings.Contains(msg, "ERR_UPLOAD_LOCKED") || code == http.StatusLocked:
		return "another request is writing this upload now (ERR_UPLOAD_LOCKED): wait for it, then ask with HEAD for the Upload-Offset"
	case code == http.StatusConflict:
		return "Upload-Offset is not where the upload stands: ask with HEAD and send from the offset it gives"
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func (w *rewriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.swallow {
		if w.pending != 0 && w.text.Len() < 1024 {
			w.text.Write(b[:min(len(b), 1024-w.text.Len())])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets tusd's http.ResponseController reach the connection (its
// read deadlines).
func (w *rewriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
