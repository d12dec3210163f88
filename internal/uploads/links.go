package uploads

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Links signs and checks the short-lived links through which owners
// download an entry's files: GET /v1/files/{entry}/{upload}?exp=…&sig=…,
// where sig is the HMAC-SHA-256 of the entry, the upload and the expiry
// under a key derived from the installation's secret. Whoever has the
// link may download the file until it expires, and nothing else.
type Links struct {
	key  []byte
	base string
	ttl  time.Duration
	now  func() time.Time
}

// NewLinks makes the signer. base is the public URL links start with
// ("" for links relative to the server); ttl is --link-ttl.
func NewLinks(secret []byte, base string, ttl time.Duration, now func() time.Time) *Links {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("formd/file-links/v1"))
	if now == nil {
		now = time.Now
	}
	return &Links{key: mac.Sum(nil), base: strings.TrimSuffix(base, "/"), ttl: ttl, now: now}
}

// With is the signer with another base (when base is not "") and TTL
// (when ttl is not 0): an export for people chooses how long its links
// work, and needs them absolute.
func (l *Links) With(base string, ttl time.Duration) *Links {
	c := *l
	if base != "" {
		c.base = strings.TrimSuffix(base, "/")
	}
	if ttl > 0 {
		c.ttl = ttl
	}
	return &c
}

func (l *Links) sign(entry, upload string, exp int64) string {
	mac := hmac.New(sha256.New, l.key)
	fmt.Fprintf(mac, "%d:%s\n%d:%s\n%d\n", len(entry), entry, len(upload), upload, exp)
	return hex.EncodeToString(mac.Sum(nil))
}

// URL is a link to an entry's file that works for the TTL.
func (l *Links) URL(entry, upload string) string {
	exp := l.now().Add(l.ttl).Unix()
	return l.base + "/v1/files/" + url.PathEscape(entry) + "/" + url.PathEscape(upload) +
		"?exp=" + strconv.FormatInt(exp, 10) + "&sig=" + l.sign(entry, upload, exp)
}

// expiry is when a link made now stops working (URL rounds it to the
// second).
func (l *Links) expiry() time.Time { return time.Unix(l.now().Add(l.ttl).Unix(), 0) }

// errLink is a link that is wrong or expired; the answer does not say
// which.
var errLink = errors.New("file link not valid")

// check verifies a link's signature and expiry.
func (l *Links) check(entry, upload, exp, sig string) error {
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return errLink
	}
	want := l.sign(entry, upload, e)
	if !hmac.Equal([]byte(want), []byte(sig)) || l.now().Unix() >= e {
		return errLink
	}
	return nil
}

// File is one file of an entry as exports and webhooks carry it.
type File struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url"`
	// Expires is when URL stops working (not in exports and webhook
	// bodies, whose contract is the five members above).
	Expires time.Time `json:"-"`
}

// EntryStore reads the uploads an entry claimed.
type EntryStore interface {
	EntryUploads(ctx context.Context, entryID string) ([]store.Upload, error)
}

// Files lists an entry's files with a fresh signed link each, by field.
func (l *Links) Files(ctx context.Context, st EntryStore, entryID string) (map[string][]File, error) {
	ups, err := st.EntryUploads(ctx, entryID)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]File, len(ups))
	for _, u := range ups {
		if u.Erased {
			continue // its entry's data is erased: the file is not served
		}
		out[u.Field] = append(out[u.Field], File{Name: CleanName(u.Name), Type: u.Type, Size: u.Size,
			SHA256: hex.EncodeToString(u.SHA256[:]), URL: l.URL(entryID, u.ID), Expires: l.expiry()})
	}
	return out, nil
}

// RegisterDownloads adds the download route for signed links.
func (s *Service) RegisterDownloads(mux *http.ServeMux, l *Links) {
	mux.Handle("GET /v1/files/{entry}/{upload}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.download(w, r, l)
	}))
}

// download serves a file through a signed link: always as an attachment,
// never sniffed, never run as a page (an uploaded HTML file is sent as
// bytes), and not cached by anyone between.
func (s *Service) download(w http.ResponseWriter, r *http.Request, l *Links) {
	entry, id := r.PathValue("entry"), r.PathValue("upload")
	q := r.URL.Query()
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Referrer-Policy", "no-referrer")
	if err := l.check(entry, id, q.Get("exp"), q.Get("sig")); err != nil {
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
	h.Set("Content-Disposition", ContentDisposition(u.Name))
	h.Set("Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(u.SHA256[:])+":") // RFC 9530
	http.ServeContent(w, r, "", u.CreatedAt, f)
}

// ContentDisposition is an attachment header for a file name as a
// stranger gave it (RFC 6266): an ASCII fallback with anything risky
// replaced, and the name itself percent-encoded in filename*.
func ContentDisposition(name string) string {
	name = stripFormat(name)
	if name == "" || !utf8.ValidString(name) {
		name = "file"
	}
	var ascii strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || r > 0x7e || r == '"' || r == '\\' || r == '/' || r == ';' || r == '%':
			ascii.WriteByte('_')
		default:
			ascii.WriteRune(r)
		}
	}
	var enc strings.Builder
	for _, c := range []byte(name) {
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0) {
			enc.WriteByte(c)
		} else {
			fmt.Fprintf(&enc, "%%%02X", c)
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + enc.String()
}
