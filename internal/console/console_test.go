package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const forms = `
id: fair-a
site: a
title: {en: Fair A, zh: 甲市集}
fields:
  - {name: name, type: text, required: true}
  - {name: phone, type: phone, region: CN, required: true}
unique: [[phone]]
capacity: 1
when_full: waitlist
---
id: fair-b
site: b
fields:
  - {name: name, type: text, required: true}
`

// browser is a signed-in console session: a cookie jar and the CSRF
// token of the last page.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
	// hdr is added to every request (an Origin, a proxy's headers).
	hdr http.Header
}

var csrfRe = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		if b.csrf != "" && form.Get("_csrf") == "" {
			form.Set("_csrf", b.csrf)
		}
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range b.hdr {
		req.Header[k] = v
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if m := csrfRe.FindSubmatch(raw); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(raw)
}

func signIn(t *testing.T, h *servertest.Harness, email string, role accounts.Role, sites ...string) *browser {
	t.Helper()
	_, err := h.Server.Accounts.AddAccount(context.Background(), accounts.Operator("test"), accounts.NewAccount{
		Email: email, Role: role, Sites: sites, Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: h.URL, c: &http.Client{Jar: jar}}
	code, body := b.do("POST", "/admin/login", url.Values{"email": {email}, "password": {"correct horse battery staple"}, "next": {"/admin/forms"}})
	if code != 200 || !strings.Contains(body, "Sign out") {
		t.Fatalf("sign in as %s: %d %s", email, code, body)
	}
	return b
}

func submit(t *testing.T, h *servertest.Harness, form, body string) string {
	t.Helper()
	return submitEncoded(t, h, form, "application/json", strings.NewReader(body))
}

// adminAPI calls the admin API with the harness's admin token, body (""
// for none) sent as it is, and returns the status and the answer.
func adminAPI(t *testing.T, h *servertest.Harness, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// submitEncoded submits body in the encoding contentType names (JSON, or
// a multipart form that carries files), wants it stored, and returns the
// entry's id.
func submitEncoded(t *testing.T, h *servertest.Harness, form, contentType string, body io.Reader) string {
	t.Helper()
	resp, err := http.Post(h.URL+"/v1/forms/"+form+"/submissions", contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, raw)
	}
	id := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(string(raw))[1]
	return id
}

// TestPagesAndActions walks every page as an owner and presses the
// entry's buttons: cancel promotes the waitlist, and each is in the
// audit log.
func TestPagesAndActions(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	first := submit(t, h, "fair-a", `{"name":"Ann","phone":"13800138000"}`)
	second := submit(t, h, "fair-a", `{"name":"Bo","phone":"13800138001"}`)
	for _, tc := range []struct {
		path, want string
	}{
		{"/admin/forms", "Fair A"},
		{"/admin/forms/fair-a", "Close now"},
		{"/admin/forms/fair-a/card", `data-count="stored">1<`},
		{"/admin/forms/fair-a/edit", "Definition (YAML)"},
		{"/admin/forms/fair-a/submissions", "Bo"},
		{"/admin/forms/fair-a/submissions?q=%2B86+138+0013+8001", "Bo"},
		{"/admin/forms/fair-a/submissions?status=waitlisted", "Bo"},
		{"/admin/forms/fair-a/entries/" + first, "Outcome history"},
		{"/admin/forms/fair-a/proof", "Arrival rate"},
		{"/admin/forms/fair-a/proof", "Arrival reports refused in this window (another origin, a key unlike the SDK&#39;s, an unknown key sent without an origin, or over a budget): 0."},
		{"/admin/replay", "Dry run"},
		{"/admin/forget", "Find the entries"},
		{"/admin/accounts", "Add an account"},
		{"/admin/audit", "login"},
		{"/admin/forms?lang=zh", "甲市集"},
	} {
		code, body := b.do("GET", tc.path, nil)
		if code != 200 || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%.2000s", tc.path, code, tc.want, body)
		}
	}
	b.do("GET", "/admin/forms?lang=en", nil) // the switch is remembered: back to English
	if _, body := b.do("GET", "/admin/forms/fair-a/submissions?q=138+0013+8000", nil); strings.Contains(body, ">Bo<") || !strings.Contains(body, ">Ann<") {
		t.Errorf("search for a phone written differently:\n%.3000s", body)
	}
	b.do("GET", "/admin/forms/fair-a/entries/"+first, nil)
	code, body := b.do("POST", "/admin/forms/fair-a/entries/"+first+"/cancel", url.Values{})
	if code != 200 || !strings.Contains(body, "The entry was cancelled.") || !strings.Contains(body, second) {
		t.Fatalf("cancel: %d %.3000s", code, body)
	}
	_, body = b.do("GET", "/admin/audit", nil)
	if !strings.Contains(body, "entry.cancel") {
		t.Errorf("the audit log lacks the cancel:\n%.3000s", body)
	}
	// Close now, then a definition with a mistake: refused with the
	// problem by line, the text kept; then a good one is saved.
	b.do("GET", "/admin/forms/fair-a", nil)
	if code, body := b.do("POST", "/admin/forms/fair-a/close", url.Values{}); code != 200 || !strings.Contains(body, "The form is closed.") || !strings.Contains(body, "Open now") {
		t.Fatalf("close now: %d %.2000s", code, body)
	}
	bad := "id: fair-a\nsite: a\nfields:\n  - {name: name, type: txt}\n"
	code, body = b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {bad}})
	if code != 422 || !strings.Contains(body, `type &#34;txt&#34; is not valid`) || !strings.Contains(body, "line 4") || !strings.Contains(body, "type: txt") {
		t.Fatalf("a bad definition: %d %.3000s", code, body)
	}
	good := "id: fair-a\nsite: a\ntitle: Fair A\nfields:\n  - {name: name, type: text, required: true}\n  - {name: phone, type: phone, region: CN, required: true}\nunique: [[phone]]\ncapacity: 2\nwhen_full: waitlist\n"
	// Capacity changes on a form with entries: first the confirm step,
	// then saved (formdiff_test.go tests the step itself).
	if code, body := b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {good}, "confirm": {confirmOf(t, b, good)}}); code != 200 || !strings.Contains(body, "The definition was saved.") || !strings.Contains(body, "1 of 2 taken") {
		t.Fatalf("a good definition: %d %.3000s", code, body)
	}
	// A change without the CSRF token is refused.
	b.csrf = "wrong"
	if code, _ := b.do("POST", "/admin/forms/fair-a/close", url.Values{}); code != 403 {
		t.Errorf("close without the CSRF token: %d, want 403", code)
	}
}

// TestScope: an account of site b reaches nothing of site a's form, by
// URL, on any page or endpoint; a viewer sees no button it may not press
// and is refused when it posts anyway.
func TestScope(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	id := submit(t, h, "fair-a", `{"name":"Ann","phone":"13800138000"}`)
	other := signIn(t, h, "b@example.org", accounts.Owner, "b")
	viewer := signIn(t, h, "viewer@example.org", accounts.Viewer, "a")
	for _, p := range []string{
		"/admin/forms/fair-a", "/admin/forms/fair-a/card", "/admin/forms/fair-a/edit", "/admin/forms/fair-a/submissions",
		"/admin/forms/fair-a/entries/" + id, "/admin/forms/fair-a/proof", "/admin/audit?form=fair-a",
		"/v1/admin/forms/fair-a/stats", "/v1/admin/forms/fair-a/chart", "/v1/admin/forms/fair-a/definition",
		"/v1/admin/forms/fair-a/submissions", "/v1/admin/forms/fair-a/entries", "/v1/admin/forms/fair-a/entries/" + id,
		"/v1/admin/forms/fair-a/export?format=csv", "/v1/admin/forms/fair-a/proof", "/v1/admin/audit-log?form=fair-a",
	} {
		if code, body := other.do("GET", p, nil); code != 404 {
			t.Errorf("site b GET %s: %d, want 404\n%.500s", p, code, body)
		}
	}
	other.do("GET", "/admin/forms", nil)
	for _, p := range []string{
		"/admin/forms/fair-a/close", "/admin/forms/fair-a/open", "/admin/forms/fair-a/entries/" + id + "/cancel",
		"/admin/forms/fair-a/entries/" + id + "/spam", "/admin/forms/fair-a/audit", "/admin/forms/fair-a/edit",
		"/admin/forms/fair-a/dead-letters/k/retry",
	} {
		if code, _ := other.do("POST", p, url.Values{}); code != 404 {
			t.Errorf("site b POST %s: %d, want 404", p, code)
		}
	}
	if code, _ := other.do("POST", "/admin/replay", url.Values{"form": {"fair-a"}}); code != 404 {
		t.Errorf("site b replays site a's form: %d, want 404", code)
	}
	if _, body := other.do("GET", "/admin/forms", nil); strings.Contains(body, "fair-a") {
		t.Error("site b's forms page lists site a's form")
	}
	// The viewer reads, and has no buttons.
	_, body := viewer.do("GET", "/admin/forms/fair-a/entries/"+id, nil)
	if !strings.Contains(body, "Ann") || strings.Contains(body, "Cancel this entry") || strings.Contains(body, "Mark as spam") {
		t.Errorf("viewer's entry page:\n%.3000s", body)
	}
	if _, body := viewer.do("GET", "/admin/forms/fair-a", nil); strings.Contains(body, "Close now") || strings.Contains(body, "Edit the definition") {
		t.Error("viewer sees the form's buttons")
	}
	viewer.do("GET", "/admin/forms/fair-a", nil)
	for _, p := range []string{"/admin/forms/fair-a/close", "/admin/forms/fair-a/entries/" + id + "/cancel", "/admin/forms/fair-a/edit"} {
		if code, _ := viewer.do("POST", p, url.Values{}); code != 403 {
			t.Errorf("viewer POST %s: %d, want 403", p, code)
		}
	}
	if code, _ := viewer.do("GET", "/admin/forget", nil); code != 403 {
		t.Errorf("viewer opens forget: %d, want 403", code)
	}
}

func TestSignInOutAndLimit(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "o@example.org", accounts.Owner, "*")
	resp, err := http.Get(h.URL + "/admin/forms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/admin/login" {
		t.Errorf("signed out, /admin/forms ends at %s, want the sign-in page", resp.Request.URL)
	}
	b.do("GET", "/admin/forms", nil)
	if code, body := b.do("POST", "/admin/logout", url.Values{}); code != 200 || !strings.Contains(body, "You are signed out.") {
		t.Fatalf("sign out: %d %.1000s", code, body)
	}
	if code, body := b.do("GET", "/admin/forms", nil); code != 200 || !strings.Contains(body, `action="/admin/login"`) {
		t.Fatalf("after sign-out: %d %.500s", code, body)
	}
	var last int
	for i := range 12 {
		last, _ = b.do("POST", "/admin/login", url.Values{"email": {"o@example.org"}, "password": {fmt.Sprint("wrong", i)}})
	}
	if last != 429 {
		t.Errorf("the 12th wrong password: %d, want 429", last)
	}
}

// TestTilesAddUp: on a full form that refuses, the tiles count every
// submission received once, so they add up to Received (issue 21 item 6).
func TestTilesAddUp(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: full
site: a
fields:
  - {name: name, type: text, required: true}
capacity: 1
`, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	for _, name := range []string{"Ann", "Bo", "Cy"} {
		resp, err := http.Post(h.URL+"/v1/forms/full/submissions", "application/json", strings.NewReader(`{"name":"`+name+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	count := regexp.MustCompile(`data-count="([a-z-]+)">([0-9—]+)<`)
	poll.UntilNil(t, "the three entries decided on the card", 20*time.Second, func() error {
		_, body := b.do("GET", "/admin/forms/full/card", nil)
		got := map[string]int{}
		for _, m := range count.FindAllStringSubmatch(body, -1) {
			n, _ := strconv.Atoi(m[2])
			got[m[1]] = n
		}
		sum := 0
		for k, n := range got {
			if k != "received" {
				sum += n
			}
		}
		if got["received"] != 3 || got["processing"] != 0 {
			return fmt.Errorf("not decided yet: %v", got)
		}
		if sum != 3 || got["stored"] != 1 || got["rejected"] != 2 {
			t.Fatalf("tiles %v add up to %d, received %d", got, sum, got["received"])
		}
		return nil
	})
}

// TestRefusalsAtTheDoor: posts to a closed form and posts with values to
// fix are kept nowhere, but the card counts them (issue 21 item 6), apart
// from Received.
func TestRefusalsAtTheDoor(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: open
site: a
fields:
  - {name: name, type: text, required: true}
---
id: later
site: a
opens_at: 2099-01-01T00:00:00Z
fields:
  - {name: name, type: text}
`, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	post := func(form, body string, want int) {
		t.Helper()
		resp, err := http.Post(h.URL+"/v1/forms/"+form+"/submissions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("post to %s: %d, want %d", form, resp.StatusCode, want)
		}
	}
	post("open", `{}`, http.StatusUnprocessableEntity)
	post("open", `{"name":""}`, http.StatusUnprocessableEntity)
	post("open", `{"name":"Ann"}`, http.StatusCreated)
	post("later", `{"name":"Bo"}`, http.StatusGone)
	refused := regexp.MustCompile(`data-refused="([a-z-]+)">([0-9]+)<`)
	counts := func(form string) map[string]int {
		_, body := b.do("GET", "/admin/forms/"+form+"/card", nil)
		got := map[string]int{}
		for _, m := range refused.FindAllStringSubmatch(body, -1) {
			n, _ := strconv.Atoi(m[2])
			got[m[1]] = n
		}
		if !strings.Contains(body, `data-count="received">1<`) && form == "open" {
			got["received-not-1"] = 1
		}
		return got
	}
	poll.UntilNil(t, "the refusals counted", 20*time.Second, func() error {
		o, l := counts("open"), counts("later")
		if o["validation-failed"] == 2 && o["form-closed"] == 0 && o["received-not-1"] == 0 && l["form-closed"] == 1 && l["validation-failed"] == 0 {
			return nil
		}
		return fmt.Errorf("open %v, later %v; want 2 to fix on open (received 1), 1 closed on later", o, l)
	})
}

// TestRedeliverNeedsAnEventNumber: a redeliver whose event is not a
// number is refused as bad input, not read as event 0.
func TestRedeliverNeedsAnEventNumber(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	id := submit(t, h, "fair-a", `{"name":"Ann","phone":"13800138000"}`)
	b.do("GET", "/admin/forms/fair-a/entries/"+id, nil)
	code, body := b.do("POST", "/admin/forms/fair-a/entries/"+id+"/redeliver", url.Values{"event": {"first"}, "endpoint": {"webhook:x"}})
	if code != http.StatusBadRequest {
		t.Fatalf("redeliver event=first: %d, want 400\n%s", code, body)
	}
}
