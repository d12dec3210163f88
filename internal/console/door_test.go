package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

const doorForms = `
id: gala
site: a
title: {en: Gala, zh: 晚会}
checkin: true
fields:
  - {name: name, type: text, required: true}
  - {name: session, type: select, options: [morning, afternoon]}
capacity: 1
when_full: waitlist
`

// codeOf registers an entry and reads its ticket's short code ("" for
// none) from the participant's link.
func codeOf(t *testing.T, h *servertest.Harness, body string) string {
	t.Helper()
	resp, err := http.Post(h.URL+"/v1/forms/gala/submissions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`"manage":"/e/([^"]+)"`).FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatalf("no link in %s", raw)
	}
	resp, err = http.Get(h.URL + "/v1/entries/" + m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		TicketCode string `json:"ticket_code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v.TicketCode
}

var answerRe = regexp.MustCompile(`(?s)class="door-answer door-(\w+)" role="status">.*?<p>(.*?)</p>`)

// TestDoorPageWithoutJavaScript types codes into the door page as a
// plain form: the first check-in, the same form posted again, a second
// scan, an unknown code, in both languages, and the counts.
func TestDoorPageWithoutJavaScript(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, doorForms, servertest.Options{})
	ann := codeOf(t, h, `{"name":"Ann","session":"morning"}`)
	if ann == "" {
		t.Fatal("Ann has no ticket")
	}
	b := signIn(t, h, "ed@example.org", accounts.Editor, "a")
	code, page := b.do("GET", "/admin/forms/gala/door", nil)
	if code != 200 || !strings.Contains(page, "0 of 1 checked in") || !strings.Contains(page, `aria-current="page">Door<`) {
		t.Fatalf("door page: %d %s", code, page)
	}
	key := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(page)[1]
	scan := func(form url.Values) (kind, words string) {
		t.Helper()
		code, page := b.do("POST", "/admin/forms/gala/door", form)
		m := answerRe.FindStringSubmatch(page)
		if code != 200 || m == nil {
			t.Fatalf("scan %v: %d %s", form, code, page)
		}
		return m[1], m[2]
	}
	first := url.Values{"door": {"B"}, "ticket": {strings.ToLower(ann)}, "key": {key}}
	if kind, words := scan(first); kind != "ok" || words != "Checked in — Ann, morning" {
		t.Fatalf("first: %s %q", kind, words)
	}
	if kind, words := scan(url.Values{"door": {"B"}, "ticket": {ann}, "key": {key}}); kind != "ok" || words != "Checked in — Ann, morning" {
		t.Fatalf("the same form posted again: %s %q, want its first answer", kind, words)
	}
	if kind, words := scan(url.Values{"door": {"C"}, "ticket": {ann}}); kind != "again" || !strings.Contains(words, "at door B — Ann, morning") {
		t.Fatalf("second: %s %q", kind, words)
	}
	if kind, words := scan(url.Values{"door": {"C"}, "ticket": {"00000-00000"}}); kind != "bad" || words != "Not valid: no ticket of this event has this code" {
		t.Fatalf("unknown code: %s %q", kind, words)
	}
	_, page = b.do("GET", "/admin/forms/gala/door", nil)
	if !strings.Contains(page, "1 of 1 checked in") {
		t.Fatalf("counts after: %s", page)
	}
	b.hdr = http.Header{"Accept-Language": {"zh-CN"}}
	b.c.Jar.SetCookies(mustURL(t, h.URL), []*http.Cookie{{Name: "formd_lang", Value: "zh"}})
	if kind, words := scan(url.Values{"door": {"C"}, "ticket": {"FT1.other.x.y"}}); kind != "bad" || !strings.HasPrefix(words, "无效：") {
		t.Fatalf("zh: %s %q", kind, words)
	}
	// A viewer reads but does not check people in.
	v := signIn(t, h, "vi@example.org", accounts.Viewer, "a")
	if code, _ := v.do("GET", "/admin/forms/gala/door", nil); code != 403 {
		t.Fatalf("a viewer at the door: %d", code)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDoorScreenshots writes the screenshots of docs/checkin/ when
// FORMD_SCREENSHOTS names a directory (Chromium at /usr/bin/chromium): a
// participant's ticket and the door page after a scan, at a phone's 390
// px width.
func TestDoorScreenshots(t *testing.T) {
	dir := os.Getenv("FORMD_SCREENSHOTS")
	if dir == "" {
		t.Skip("FORMD_SCREENSHOTS is not set")
	}
	h := servertest.Start(t, doorForms, servertest.Options{})
	resp, err := http.Post(h.URL+"/v1/forms/gala/submissions", "application/json", strings.NewReader(`{"name":"Ann","session":"morning"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	manage := regexp.MustCompile(`"manage":"(/e/[^"]+)"`).FindStringSubmatch(string(raw))[1]
	shoot := func(name, target string) {
		out, err := exec.Command("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--window-size=390,900", "--screenshot="+filepath.Join(dir, name), target).CombinedOutput()
		if err != nil {
			t.Fatalf("chromium: %v %s", err, out)
		}
	}
	shoot("ticket.png", h.URL+manage)
	resp, _ = http.Get(h.URL + strings.Replace(manage, "/e/", "/v1/entries/", 1))
	var v struct {
		TicketCode string `json:"ticket_code"`
	}
	json.NewDecoder(resp.Body).Decode(&v) //nolint:errcheck // checked by the page below
	resp.Body.Close()
	b := signIn(t, h, "ed@example.org", accounts.Editor, "a")
	b.do("POST", "/admin/forms/gala/door", url.Values{"door": {"B"}, "ticket": {v.TicketCode}})
	_, page := b.do("POST", "/admin/forms/gala/door", url.Values{"door": {"B"}, "ticket": {v.TicketCode}})
	static, _ := filepath.Abs("static")
	page = strings.ReplaceAll(page, `"/admin/static/`, `"file://`+static+`/`)
	file := filepath.Join(t.TempDir(), "door.html")
	if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	shoot("door.png", "file://"+file)
}
