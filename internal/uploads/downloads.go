package uploads

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/links"
)

// LinkChecker says whether a download link (its entry, upload, expiry
// and signature) is one this installation signed and still honours.
type LinkChecker interface {
	Check(entry, upload, exp, sig string) error
}

var _ LinkChecker = (*links.Signer)(nil)

// RegisterDownloads adds the download route for signed links.
func (s *Service) RegisterDownloads(mux *http.ServeMux, l LinkChecker) {
	mux.Handle("GET /v1/files/{entry}/{upload}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.download(w, r, l)
	}))
}

// download serves a file through a signed link: always as an attachment,
// never sniffed, never run as a page (an uploaded HTML file is sent as
// bytes), and not cached by anyone between.
func (s *Service) download(w http.ResponseWriter, r *http.Request, l LinkChecker) {
	entry, id := r.PathValue("entry"), r.PathValue("upload")
	q := r.URL.Query()
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Referrer-Policy", "no-referrer")
	if err := l.Check(entry, id, q.Get("exp"), q.Get("sig")); err != nil {
		writeProblem(w, r, problem.New(problem.CodeForbidden, "this file link is wrong or has expired; ask for a new one"), 0)
		return
	}
	// The store's state of the upload decides, not the link alone: a file
	// whose entry was erased is not served from the moment the erasure
	// commits, though a link made before is signed and unexpired.
	u, err := s.st.Upload(r.Context(), id)
	switch {
	case err == nil && u.Entry == entry && u.Erased:
		writeProblem(w, r, problem.New(problem.CodeFileErased, "the entry this file belonged to was erased; its files are not served any more"), 0)
		return
	case errors.Is(err, store.ErrUploadNotFound) || err == nil && u.Entry != entry:
		writeProblem(w, r, problem.New(problem.CodeNotFound, "the entry has no such file (it may have been erased)"), 0)
		return
	case err != nil:
		s.cfg.Logger.Warn("read an upload for a download", "upload", id, "err", err)
		writeProblem(w, r, problem.From(err), 0)
		return
	}
	f, err := s.Open(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrUploadNotFound):
		writeProblem(w, r, problem.New(problem.CodeNotFound, "the file's bytes are missing"), 0)
		return
	case err != nil:
		s.cfg.Logger.Warn("read an upload's bytes for a download", "upload", id, "err", err)
		writeProblem(w, r, problem.From(err), 0)
		return
	}
	defer f.Close()
	if q.Get("thumb") == "1" {
		s.serveThumb(w, r, u.Type, f, u.Size)
		return
	}
	typ := u.Type
	if typ == "" || strings.HasPrefix(typ, "text/html") || strings.Contains(typ, "xml") || strings.Contains(typ, "javascript") {
		typ = "application/octet-stream"
	}
	h.Set("Content-Type", typ)
	h.Set("Content-Disposition", links.ContentDisposition(u.Name))
	h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(u.SHA256[:])+":") // RFC 9530
	http.ServeContent(w, r, "", u.CreatedAt, f)
}
