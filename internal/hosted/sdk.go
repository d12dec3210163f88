package hosted

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	sdkjs "github.com/formd/formd/sdk/js"
)

// sdkFile is one embedded SDK module, with its gzip form made once at
// start-up.
type sdkFile struct {
	name      string
	plain, gz []byte
	// version is a short content hash: the hosted page asks for
	// /sdk/formd.js?v=VERSION, which can then be cached for good.
	version string
}

func newSDKFile(name, source string) sdkFile {
	src := []byte(source)
	sum := sha256.Sum256(src)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	zw.Write(src)                                            //nolint:errcheck // writes to memory
	zw.Close()                                               //nolint:errcheck // writes to memory
	return sdkFile{name: name, plain: src, gz: buf.Bytes(), version: hex.EncodeToString(sum[:6])}
}

// sdkFiles are the modules served under /sdk/: the SDK and its texts in
// English and Chinese (a module of their own, for pages that bring none).
func sdkFiles() map[string]sdkFile {
	return map[string]sdkFile{
		"formd.js":    newSDKFile("formd.js", sdkjs.Source()),
		"messages.js": newSDKFile("messages.js", sdkjs.Messages()),
		// Imported by formd.js when a submission has files.
		"uploads.js":   newSDKFile("uploads.js", sdkjs.Uploads()),
		"challenge.js": newSDKFile("challenge.js", sdkjs.Challenge()),
		// Loaded by a hosted page whose fields have show_if.
		"conditions.js": newSDKFile("conditions.js", sdkjs.Conditions()),
		// Loaded by a hosted page with pages.
		"steps.js": newSDKFile("steps.js", sdkjs.Steps()),
		// Loaded by a hosted page whose form keeps drafts.
		"drafts.js": newSDKFile("drafts.js", sdkjs.Drafts()),
		// For custom front-ends: which options of a session are full.
		"places.js": newSDKFile("places.js", sdkjs.Places()),
	}
}

// serveSDK is GET /sdk/{file}. A request for the current version (?v=…)
// is cacheable for a year; the bare URL, which third-party pages use, for
// five minutes, then revalidated by ETag.
func (h *Handler) serveSDK(w http.ResponseWriter, r *http.Request) {
	f, ok := h.sdkFiles[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	// Module scripts load in CORS mode: other origins embedding a form
	// need this, and the file is public.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	f.serve(w, r, "text/javascript; charset=utf-8")
}

// serve answers with the file: cacheable for good under its version
// (?v=), else for five minutes; gzipped when the client takes it.
func (f sdkFile) serve(w http.ResponseWriter, r *http.Request, contentType string) {
	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == f.version {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "public, max-age=300")
	}
	body, etag := f.plain, `"`+f.version+`"`
	if acceptsGzip(r) {
		body, etag = f.gz, `"`+f.version+`-gz"`
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("ETag", etag)
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(body))
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}
