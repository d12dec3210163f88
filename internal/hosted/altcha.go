package hosted

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"net/http"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
)

// The altcha widget (MIT), vendored by altcha/vendor.sh at the version its
// package-lock.json pins: formd serves it itself, so a hosted form with
// the proof-of-work challenge calls no third party, and only such forms
// load it.
//
//go:embed altcha/dist/altcha.js altcha/dist/worker.js altcha/dist/altcha.css altcha/dist/LICENSE.txt
var altchaFS embed.FS

// altchaPrefix is where the widget's files are served.
const altchaPrefix = "/static/altcha/"

// altchaFiles are the widget's files, each with its gzip form, made once.
var altchaFiles = func() map[string]sdkFile {
	out := map[string]sdkFile{}
	for _, name := range []string{"altcha.js", "worker.js", "altcha.css", "LICENSE.txt"} {
		b, err := altchaFS.ReadFile("altcha/dist/" + name)
		if err != nil {
			panic("vendored altcha file missing: " + name)
		}
		out[name] = newSDKFile(name, string(b))
	}
	return out
}()

// AltchaWireSize is the bytes a hosted page with the challenge fetches
// for the widget, gzipped as served (script, worker and style).
func AltchaWireSize() int {
	n := 0
	for _, name := range []string{"altcha.js", "worker.js", "altcha.css"} {
		n += len(altchaFiles[name].gz)
	}
	return n
}

// serveAltcha is GET /static/altcha/{file}: the vendored widget, cacheable
// for good under its version (?v=), else for five minutes.
func (h *Handler) serveAltcha(w http.ResponseWriter, r *http.Request) {
	f, ok := altchaFiles[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hdr := w.Header()
	switch {
	case bytes.HasSuffix([]byte(f.name), []byte(".css")):
		hdr.Set("Content-Type", "text/css; charset=utf-8")
	case bytes.HasSuffix([]byte(f.name), []byte(".js")):
		hdr.Set("Content-Type", "text/javascript; charset=utf-8")
	default:
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
	}
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

// challengeView is what the page needs for a form with spam.challenge:
// the widget's files, its settings and texts in the page's language, and
// what to say without JavaScript.
type challengeView struct {
	Script, Style, URL string
	// Strings are the widget's texts (its strings attribute, JSON).
	Strings string
	// NoScript is said when JavaScript is off and the form needs it; empty
	// with the honeypot fallback, where the page works without it.
	NoScript string
}

// challengeFor is f's challengeView in l, nil for a form without one.
func challengeFor(f *form.Form, l lang) *challengeView {
	rules := f.Def.Spam
	if !rules.NeedsChallenge() {
		return nil
	}
	strings := map[string]string{}
	for _, k := range []string{"label", "verifying", "verified", "error", "expired", "verificationRequired", "waitAlert", "ariaLinkLabel", "footer"} {
		strings[k] = l.T["pow."+k]
	}
	b, _ := json.Marshal(strings) //nolint:errchkjson // a map of strings
	v := &challengeView{
		Script:  altchaPrefix + "altcha.js?v=" + altchaFiles["altcha.js"].version,
		Style:   altchaPrefix + "altcha.css?v=" + altchaFiles["altcha.css"].version,
		URL:     intake.ChallengePath(f.ID()),
		Strings: string(b),
	}
	if rules.Fallback() != form.FallbackHoneypot {
		v.NoScript = l.T["pow.noscript"]
	}
	return v
}

// challengeAttrs are the widget's attributes (a template.HTMLAttr, its
// values escaped here).
func (c *challengeView) Attrs() template.HTMLAttr {
	esc := template.HTMLEscapeString
	return template.HTMLAttr(`challengeurl="` + esc(c.URL) + `" strings="` + esc(c.Strings) + `" name="` + intake.ChallengeField + `" auto="onload" hidelogo hidefooter`)
}
