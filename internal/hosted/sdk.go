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

// sdkFile is the embedded SDK, with its gzip form made once at start-up.
type sdkFile struct {
	plain, gz []byte
	// version is a short content hash: the hosted page asks for
	// /sdk/formd.js?v=VERSION, which can then be cached for good.
	version string
}

func newSDKFile() sdkFile {
	src := []byte(sdkjs.Source())
	sum := sha256.Sum256(src)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	zw.Write(src)                                            //nolint:errcheck // writes to memory
	zw.Close()                                               //nolint:errcheck // writes to memory
	return sdkFile{plain: src, gz: buf.Bytes(), version: hex.EncodeToString(sum[:6])}
}

// serveSDK is GET /sdk/formd.js. A request for the current version
// (?v=…) is cacheable for a year; the bare URL, which third-party pages
// use, for five minutes, then revalidated by ETag.
func (h *Handler) serveSDK(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/javascript; charset=utf-8")
	hdr.Set("X-Content-Type-Options", "nosniff")
	// Module scripts load in CORS mode: other origins embedding a form
	// need this, and the file is public.
	hdr.Set("Access-Control-Allow-Origin", "*")
	hdr.Set("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == h.sdk.version {
		hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hdr.Set("Cache-Control", "public, max-age=300")
	}
	body, etag := h.sdk.plain, `"`+h.sdk.version+`"`
	if acceptsGzip(r) {
		body, etag = h.sdk.gz, `"`+h.sdk.version+`-gz"`
		hdr.Set("Content-Encoding", "gzip")
	}
	hdr.Set("ETag", etag)
	http.ServeContent(w, r, "formd.js", time.Time{}, bytes.NewReader(body))
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
