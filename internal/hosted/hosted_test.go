package hosted

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	sdkjs "github.com/formd/formd/sdk/js"
)

var testNow = time.Date(2027, 3, 5, 10, 0, 0, 0, time.UTC)

const testForms = `
id: fair
title: {en: Spring fair, zh: 春季集市}
description: {en: One entry per phone., zh: 每个手机号一次。}
fields:
  - {name: name, type: text, required: true, max: 100, label: {en: Name, zh: 姓名}}
  - {name: phone, type: phone, required: true, region: CN, label: {en: Mobile phone, zh: 手机号}, help: {en: We text you the ticket., zh: 我们会短信发送门票。}}
  - {name: email, type: email, label: E-mail}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
  - {name: day, type: date, min: 2027-03-01, max: 2027-03-10}
  - {name: slot, type: select, options: [morning, {value: pm, label: {en: Afternoon, zh: 下午}}]}
  - {name: extras, type: multiselect, options: [lunch, parking]}
  - {name: note, type: textarea, max_length: 500}
  - {name: agree, type: checkbox, required: true, label: I agree}
unique: [[phone]]
capacity: 10
when_full: waitlist
spam: {honeypot: website}
---
id: tiny
title: Tiny
fields:
  - {name: name, type: text, required: true, label: "<script>alert(1)</script>"}
capacity: 2
when_full: reject
---
id: thanks
fields: [{name: name, type: text}]
redirect: https://club.example.org/thanks?from=formd&x=1
origins: [https://club.example.org]
---
id: later
fields: [{name: name, type: text}]
opens_at: 2027-04-01T09:00:00+08:00
---
id: over
fields: [{name: name, type: text}]
closes_at: 2027-03-01T18:00:00+08:00
`

type formMap map[string]*form.Form

func (m formMap) Get(id string) *form.Form { return m[id] }

type fakePlaces struct {
	calls atomic.Int32
	data  map[string]store.Capacity
	err   error
}

func (p *fakePlaces) Capacities(context.Context) (map[string]store.Capacity, error) {
	p.calls.Add(1)
	return p.data, p.err
}

type statusAnswer struct {
	status string
	found  bool
	err    error
}

// fakeStatuses answers by "form/key".
type fakeStatuses map[string]statusAnswer

func (f fakeStatuses) Status(_ context.Context, formID, key string) (string, bool, error) {
	a := f[formID+"/"+key]
	return a.status, a.found, a.err
}

func newTestHandler(t *testing.T, places *fakePlaces, statuses map[string]statusAnswer) (*Handler, *http.ServeMux) {
	t.Helper()
	parsed, err := form.Parse([]byte(testForms), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	forms := formMap{}
	for _, f := range parsed {
		forms[f.ID()] = f
	}
	var p Places
	if places != nil {
		p = store.NewPlacesCache(places, func() time.Time { return testNow }, time.Second)
	}
	h := New(forms, p, fakeStatuses(statuses), func() time.Time { return testNow }, slog.New(slog.DiscardHandler))
	mux := http.NewServeMux()
	h.Register(mux)
	return h, mux
}

func get(t *testing.T, mux http.Handler, target string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPage(t *testing.T) {
	t.Parallel()
	places := &fakePlaces{data: map[string]store.Capacity{"fair": {Taken: 7}, "tiny": {Taken: 2}}}
	_, mux := newTestHandler(t, places, nil)
	tests := []struct {
		name       string
		url        string
		lang       string
		wantStatus int
		want       []string
		notWant    []string
	}{
		{
			name: "english form", url: "/f/fair", wantStatus: 200,
			want: []string{
				`<html lang="en">`, `<title>Spring fair</title>`, `<p class="intro">One entry per phone.</p>`,
				`<form method="post" action="/v1/forms/fair/submissions" data-formd="fair"`,
				`<script type="module" src="/sdk/formd.js?v=`,
				`<label for="f-name">Name<span class="req" aria-hidden="true"> *</span></label>`,
				`<input type="text" id="f-name" name="name" data-label="Name" required autocomplete="name" maxlength="100" aria-describedby="e-name">`,
				`<input type="tel" id="f-phone" name="phone" data-label="Mobile phone" required autocomplete="tel" aria-describedby="h-phone e-phone">`,
				`<p class="help" id="h-phone">We text you the ticket.</p>`,
				`<input type="email" id="f-email" name="email" data-label="E-mail" autocomplete="email" aria-describedby="e-email">`,
				`<input type="number" id="f-tickets" name="tickets" data-label="tickets" inputmode="numeric" min="1" max="4" step="1" aria-describedby="e-tickets">`,
				`<input type="date" id="f-day" name="day" data-label="day" min="2027-03-01" max="2027-03-10" aria-describedby="e-day">`,
				`<option value="">Choose…</option><option value="morning">morning</option><option value="pm">Afternoon</option>`,
				`<legend>extras</legend>`, `<input type="checkbox" id="f-extras-1" name="extras" value="parking">`,
				`<textarea id="f-note" name="note" rows="4" data-label="note" maxlength="500" aria-describedby="e-note"></textarea>`,
				`<input type="checkbox" id="f-agree" name="agree" value="true" data-label="I agree" required`,
				`<p class="error" id="e-phone" data-formd-error="phone" hidden></p>`,
				`<div class="hp" aria-hidden="true">`, `name="website" tabindex="-1" autocomplete="off"`,
				`role="status" aria-live="polite" data-formd-status`,
				`data-msg-saved="Saved on this device.`, `data-msg-duplicate="You are already registered."`,
				`<p class="places">3 places left.</p>`,
			},
			notWant: []string{"data-err-required", "ZgotmplZ", "data-formd-redirect"},
		},
		{
			name: "chinese by accept-language", url: "/f/fair", lang: "zh-CN,zh;q=0.9,en;q=0.8", wantStatus: 200,
			want: []string{
				`<html lang="zh-CN">`, `<title>春季集市</title>`, `<label for="f-name">姓名`, `<label for="f-phone">手机号`,
				`我们会短信发送门票。`, `<option value="pm">下午</option>`, `>提交</button>`,
				`data-msg-received="已收到，谢谢！"`, `data-err-required="此项必填。"`, `data-err-invalid-phone=`, `还剩 3 个名额。`,
			},
		},
		{name: "q-values decide", url: "/f/fair", lang: "en;q=0.4, zh-TW;q=0.8", wantStatus: 200, want: []string{`<html lang="zh-CN">`}},
		{name: "lang query wins", url: "/f/fair?lang=en", lang: "zh-CN", wantStatus: 200, want: []string{`<html lang="en">`}},
		{name: "other languages get english", url: "/f/fair", lang: "fr-FR,de;q=0.5", wantStatus: 200, want: []string{`<html lang="en">`}},
		{
			name: "full without waitlist shows no form", url: "/f/tiny", wantStatus: 200,
			want: []string{`<p class="notice" role="status">Sorry, every place is taken.</p>`}, notWant: []string{"<form"},
		},
		{
			name: "not open yet", url: "/f/later", wantStatus: 200,
			want:    []string{"This form is not taking submissions now. It opens on 2027-04-01 09:00 (UTC&#43;08:00)."},
			notWant: []string{"<form"},
		},
		{
			name: "closed", url: "/f/over", lang: "zh", wantStatus: 200,
			want: []string{"此表单当前不接受提交。 已于 2027-03-01 18:00 (UTC&#43;08:00) 截止。"}, notWant: []string{"<form"},
		},
		{
			name: "thank-you page for the SDK", url: "/f/thanks", wantStatus: 200,
			want: []string{`data-formd="thanks" data-formd-redirect="https://club.example.org/thanks?from=formd&amp;x=1"`},
		},
		{name: "unknown form", url: "/f/nope", wantStatus: 404, want: []string{"There is no form at this address."}},
		{name: "unknown form in chinese", url: "/f/nope", lang: "zh", wantStatus: 404, want: []string{"此地址没有表单。"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := get(t, mux, tc.url, map[string]string{"Accept-Language": tc.lang})
			page := body(t, res)
			if res.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.wantStatus)
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q: each view needs its own _key", cc)
			}
			if v := res.Header.Get("Vary"); v != "Accept-Language" {
				t.Errorf("Vary %q", v)
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %s", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(page, w) {
					t.Errorf("page has %s", w)
				}
			}
			if t.Failed() {
				t.Log(page)
			}
		})
	}
}

func TestPageEscapesDefinitionText(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, &fakePlaces{data: map[string]store.Capacity{}}, nil)
	page := body(t, get(t, mux, "/f/tiny", nil))
	if strings.Contains(page, "<script>alert") {
		t.Fatal("a label went into the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the label is missing")
	}
}

var (
	keyRe  = regexp.MustCompile(`name="_key" value="([^"]+)"`)
	tsRe   = regexp.MustCompile(`name="_ts" value="([^"]+)"`)
	uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

// Without JavaScript, the page's _key is what makes a re-sent post land
// once; it must be new on every view.
func TestPageKeyIsFreshEachView(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, nil, nil)
	seen := map[string]bool{}
	for range 20 {
		page := body(t, get(t, mux, "/f/fair", nil))
		m := keyRe.FindStringSubmatch(page)
		if m == nil || !uuidRe.MatchString(m[1]) {
			t.Fatalf("no UUID _key in the page: %v", m)
		}
		if seen[m[1]] {
			t.Fatalf("key %s served twice", m[1])
		}
		seen[m[1]] = true
		ts := tsRe.FindStringSubmatch(page)
		if ts == nil || ts[1] != strconv.FormatInt(testNow.UnixMilli(), 10) {
			t.Fatalf("_ts %v, want the render time %d", ts, testNow.UnixMilli())
		}
		if strings.Contains(page, `class="places"`) {
			t.Fatal("places shown without a source for them")
		}
	}
}

// Every control has a label, every label and aria-describedby points at
// an element that exists, and ids are unique.
func TestPageAccessibility(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, nil, nil)
	for _, lang := range []string{"en", "zh"} {
		page := body(t, get(t, mux, "/f/fair?lang="+lang, nil))
		ids := map[string]int{}
		for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			ids[m[1]]++
		}
		for id, n := range ids {
			if n > 1 {
				t.Errorf("%s: id %q used %d times", lang, id, n)
			}
		}
		labelled := map[string]bool{}
		for _, m := range regexp.MustCompile(`<label for="([^"]+)">`).FindAllStringSubmatch(page, -1) {
			if ids[m[1]] == 0 {
				t.Errorf("%s: label for %q, which does not exist", lang, m[1])
			}
			labelled[m[1]] = true
		}
		for _, m := range regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`).FindAllString(page, -1) {
			if strings.Contains(m, `type="hidden"`) {
				continue
			}
			id := regexp.MustCompile(` id="([^"]+)"`).FindStringSubmatch(m)
			if id == nil || !labelled[id[1]] {
				t.Errorf("%s: control without a label: %s", lang, m)
			}
		}
		for _, m := range regexp.MustCompile(`aria-describedby="([^"]+)"`).FindAllStringSubmatch(page, -1) {
			for _, id := range strings.Fields(m[1]) {
				if ids[id] == 0 {
					t.Errorf("%s: aria-describedby names %q, which does not exist", lang, id)
				}
			}
		}
		if !strings.Contains(page, `role="status" aria-live="polite"`) {
			t.Errorf("%s: no live status region", lang)
		}
		if !strings.Contains(page, `name="viewport" content="width=device-width,initial-scale=1"`) {
			t.Errorf("%s: no mobile viewport", lang)
		}
	}
}

func TestPickLang(t *testing.T) {
	t.Parallel()
	tests := []struct{ query, header, want string }{
		{"", "", "en"},
		{"", "zh-CN", "zh-CN"},
		{"", "zh-Hans-CN, en;q=0.5", "zh-CN"},
		{"", "en-US,en;q=0.9,zh-CN;q=0.8", "en"},
		{"", "fr, zh;q=0.2", "zh-CN"},
		{"", "zh;q=0, en;q=0.1", "en"},
		{"", "zh;q=bad, en", "en"},
		{"lang=zh", "en", "zh-CN"},
		{"lang=en", "zh", "en"},
		{"lang=xx", "zh-TW", "zh-CN"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(http.MethodGet, "/f/x?"+tc.query, nil)
		r.Header.Set("Accept-Language", tc.header)
		if got := pickLang(r).Tag; got != tc.want {
			t.Errorf("?%s Accept-Language %q: %s, want %s", tc.query, tc.header, got, tc.want)
		}
	}
}

func TestDonePage(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, nil, map[string]statusAnswer{
		"fair/k-stored":  {"stored", true, nil},
		"fair/k-wait":    {"waitlisted", true, nil},
		"fair/k-dup":     {"duplicate", true, nil},
		"fair/k-full":    {"rejected", true, nil},
		"fair/k-proc":    {"processing", true, nil},
		"fair/k-cancel":  {"cancelled", true, nil},
		"fair/k-broken":  {"", false, errors.New("store down")},
		"fair/k-strange": {"something-new", true, nil},
	})
	tests := []struct {
		key, lang, status, want string
		refresh                 bool
	}{
		{"k-stored", "", "stored", "Received. Thank you!", false},
		{"k-stored", "zh", "stored", "已收到，谢谢！", false},
		{"k-wait", "", "waitlisted", "Received: you are on the waitlist.", false},
		{"k-dup", "", "duplicate", "You are already registered.", false},
		{"k-dup", "zh", "duplicate", "您已经报名过了。", false},
		{"k-full", "", "rejected", "Sorry, every place was taken", false},
		{"k-proc", "", "processing", "Received: it is being processed.", true},
		{"k-cancel", "", "cancelled", "This registration was cancelled.", false},
		{"k-broken", "", "processing", "Received: it is being processed.", true},
		{"k-strange", "", "something-new", "Received: it is being processed.", false},
		{"k-none", "", "unknown", "There is no record of this submission.", false},
		{"", "", "unknown", "There is no record of this submission.", false},
	}
	for _, tc := range tests {
		res := get(t, mux, "/f/fair/done?key="+tc.key+"&lang="+tc.lang, nil)
		page := body(t, res)
		if res.StatusCode != 200 {
			t.Errorf("%s: status %d", tc.key, res.StatusCode)
		}
		if !strings.Contains(page, `data-status="`+tc.status+`"`) || !strings.Contains(page, tc.want) {
			t.Errorf("%s %s: want status %s and %q in\n%s", tc.key, tc.lang, tc.status, tc.want, page)
		}
		if got := strings.Contains(page, `http-equiv="refresh"`); got != tc.refresh {
			t.Errorf("%s: refresh %v, want %v", tc.key, got, tc.refresh)
		}
		if !strings.Contains(page, `<a href="/f/fair">`) {
			t.Errorf("%s: no way back to the form", tc.key)
		}
	}
	if res := get(t, mux, "/f/nope/done?key=k", nil); res.StatusCode != 404 {
		t.Errorf("unknown form: %d", res.StatusCode)
	}
}

func TestSDK(t *testing.T) {
	t.Parallel()
	h, mux := newTestHandler(t, nil, nil)
	src := sdkjs.Source()
	if !strings.Contains(src, "export function createClient") {
		t.Fatal("the embedded SDK is not formd.js")
	}

	res := get(t, mux, "/sdk/formd.js", nil)
	if got := body(t, res); got != src {
		t.Fatalf("body is not the embedded SDK (%d bytes, want %d)", len(got), len(src))
	}
	for k, want := range map[string]string{
		"Content-Type":                "text/javascript; charset=utf-8",
		"Cache-Control":               "public, max-age=300",
		"Access-Control-Allow-Origin": "*",
		"X-Content-Type-Options":      "nosniff",
		"ETag":                        `"` + h.sdkVersion + `"`,
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	if got := body(t, get(t, mux, "/sdk/messages.js", nil)); got != sdkjs.Messages() {
		t.Fatalf("/sdk/messages.js is not the embedded texts module")
	}
	if got := body(t, get(t, mux, "/sdk/uploads.js", nil)); got != sdkjs.Uploads() {
		t.Fatalf("/sdk/uploads.js is not the embedded uploads module")
	}
	if res := get(t, mux, "/sdk/nothing.js", nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("/sdk/nothing.js: %d, want 404", res.StatusCode)
	}

	res = get(t, mux, "/sdk/formd.js?v="+h.sdkVersion, map[string]string{"Accept-Encoding": "br, gzip"})
	if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
		t.Errorf("versioned Cache-Control %q", cc)
	}
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip not used")
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(body(t, res))))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || string(plain) != src {
		t.Fatalf("gzip body does not decode to the SDK: %v", err)
	}

	etag := res.Header.Get("ETag")
	res = get(t, mux, "/sdk/formd.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag})
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", res.StatusCode)
	}
	if res := get(t, mux, "/sdk/formd.js", map[string]string{"Accept-Encoding": "gzip;q=0"}); res.Header.Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 still got gzip")
	}

	page := body(t, get(t, mux, "/f/fair", nil))
	if !strings.Contains(page, `src="/sdk/formd.js?v=`+h.sdkVersion+`"`) {
		t.Error("the page does not load the current SDK version")
	}
}

// With the store down the page still shows the form, without places.
func TestPageWithoutPlaces(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, &fakePlaces{err: errors.New("store down")}, nil)
	if page := body(t, get(t, mux, "/f/fair", nil)); strings.Contains(page, `class="places"`) || !strings.Contains(page, "<form") {
		t.Fatal("with the store down the page must still show the form, without places")
	}
}

// A plain post that fails validation comes back as the form, in the
// person's language, with what they typed kept, each error next to its
// field, the first one focused, and the same key.
func TestFormErrorsKeepWhatWasTyped(t *testing.T) {
	t.Parallel()
	h, _ := newTestHandler(t, nil, nil)
	f := h.forms.Get("fair")
	values := map[string]any{"name": "Li <Lei>", "phone": "12", "slot": "pm", "extras": []any{"lunch", "parking"}, "note": "see\nyou", "agree": "true"}
	errs := []form.FieldError{{Field: "phone", Code: "invalid-phone", Message: "is not a valid phone number"}, {Field: "tickets", Code: "too-large", Message: "must be at most 4"}}
	for _, tc := range []struct{ lang, want string }{{"en", "Mobile phone is not a valid phone number."}, {"zh-CN", "手机号: "}} {
		req := httptest.NewRequest(http.MethodPost, "/v1/forms/fair/submissions", nil)
		req.Header.Set("Accept-Language", tc.lang)
		rec := httptest.NewRecorder()
		h.FormErrors(rec, req, f, values, "key-of-the-post", errs)
		res := rec.Result()
		page := body(t, res)
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("%s: status %d", tc.lang, res.StatusCode)
		}
		for _, want := range []string{
			`value="Li &lt;Lei&gt;"`, `value="12"`, `<option value="pm" selected>`, `value="lunch" data-label="extras" checked`, `value="parking" checked`,
			">see\nyou</textarea>", `name="agree" value="true" data-label="I agree" required checked`, `name="_key" value="key-of-the-post"`,
			tc.want, `aria-invalid="true" autofocus`, `class="summary" role="alert"`,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: page lacks %q", tc.lang, want)
			}
		}
		if strings.Count(page, "autofocus") != 1 {
			t.Errorf("%s: %d autofocus attributes, want 1 (the first field to fix)", tc.lang, strings.Count(page, "autofocus"))
		}
	}
}

// TestFraming: a page may be framed only by formd and the form's own
// origins, so another site cannot overlay it to trick a person.
func TestFraming(t *testing.T) {
	t.Parallel()
	_, mux := newTestHandler(t, nil, nil)
	for path, want := range map[string]string{
		"/f/fair":    "frame-ancestors 'self'",
		"/f/thanks":  "frame-ancestors 'self' https://club.example.org",
		"/f/nowhere": "frame-ancestors 'self'",
	} {
		res := get(t, mux, path, nil)
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.HasSuffix(csp, want) {
			t.Errorf("%s: CSP %q, want it to end %q", path, csp, want)
		}
		if xfo := res.Header.Get("X-Frame-Options"); (want == "frame-ancestors 'self'") != (xfo == "SAMEORIGIN") {
			t.Errorf("%s: X-Frame-Options %q", path, xfo)
		}
	}
}
