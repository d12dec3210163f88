package hosted

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
)

const powTestForms = `
id: pow
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow}
---
id: lenient
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, challenge_fallback: honeypot, honeypot: website}
---
id: plain
fields: [{name: name, type: text}]
`

func powMux(t *testing.T) *http.ServeMux {
	t.Helper()
	_, mux := muxFor(t, powTestForms)
	return mux
}

// muxFor is a handler of the forms in yaml, at testNow, with no places
// and no statuses, and the mux it serves.
func muxFor(t *testing.T, yaml string) (*Handler, *http.ServeMux) {
	t.Helper()
	parsed, err := form.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	forms := formMap{}
	for _, f := range parsed {
		forms[f.ID()] = f
	}
	h := New(forms, nil, fakeStatuses(nil), func() time.Time { return testNow }, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	h.Register(mux)
	return h, mux
}

// Only a form with the challenge loads the widget; its noscript notice is
// in the page's language, and absent when the honeypot is the fallback.
func TestPageChallenge(t *testing.T) {
	t.Parallel()
	mux := powMux(t)
	page := body(t, get(t, mux, "/f/pow", nil))
	for _, want := range []string{
		`<script src="/static/altcha/altcha.js?v=`, `<link rel="stylesheet" href="/static/altcha/altcha.css?v=`,
		`<altcha-widget challengeurl="/v1/forms/pow/challenge"`, `workerurl="/static/altcha/formd-worker.js?v=`, `name="altcha" auto="onload"`,
		`data-formd-challenge`, `role="status" aria-live="polite" data-formd-pow`, `<noscript><p class="notice" role="alert">This form needs JavaScript`,
		`Checking this browser`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	zh := body(t, get(t, mux, "/f/pow", map[string]string{"Accept-Language": "zh-CN"}))
	if !strings.Contains(zh, "此表单需要启用 JavaScript") || !strings.Contains(zh, "正在确认浏览器") {
		t.Error("the Chinese page lacks its notice or the widget's texts")
	}
	if lenient := body(t, get(t, mux, "/f/lenient", nil)); strings.Contains(lenient, "<noscript>") || !strings.Contains(lenient, "altcha-widget") {
		t.Error("the honeypot fallback: widget without the noscript notice")
	}
	if plain := body(t, get(t, mux, "/f/plain", nil)); strings.Contains(plain, "altcha") || strings.Contains(plain, "data-formd-challenge") {
		t.Error("a form without the challenge loads the widget")
	}
}

// The widget's files are served, gzipped for clients that take it, and
// formd's worker is made from challenge.js.
func TestAltchaFiles(t *testing.T) {
	t.Parallel()
	mux := powMux(t)
	for _, name := range []string{"altcha.js", "altcha.css", "formd-worker.js", "worker.js", "LICENSE.txt"} {
		res := get(t, mux, altchaPrefix+name, map[string]string{"Accept-Encoding": "gzip"})
		if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: %d %s", name, res.StatusCode, res.Header)
		}
	}
	w := body(t, get(t, mux, altchaPrefix+"formd-worker.js", nil))
	if !strings.Contains(w, "function makeSearch()") || !strings.Contains(w, "onmessage") {
		t.Errorf("formd's worker: %s", w)
	}
	if res := get(t, mux, altchaPrefix+"nope.js", nil); res.StatusCode != 404 {
		t.Errorf("unknown file: %d", res.StatusCode)
	}
	if n := AltchaWireSize(); n < 10_000 || n > 40_000 {
		t.Errorf("the widget's weight on the wire: %d bytes gzipped", n)
	}
	t.Logf("the widget on the wire: %d bytes gzipped (altcha.js %d, altcha.css %d, formd-worker.js %d)",
		AltchaWireSize(), len(altchaFiles["altcha.js"].gz), len(altchaFiles["altcha.css"].gz), len(formdWorker.gz))
}
