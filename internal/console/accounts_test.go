package console_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// vmRSS is the process's resident memory in bytes, as the kernel counts
// it (/proc/self/status); the test is skipped where there is no /proc.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to read the resident memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestSetupStormBoundedMemory: 200 posts of the setup page with a bogus
// code hash no password. Each hash takes 64 MiB (accounts.DefaultParams,
// which the server uses), so resident memory growing by less than 32 MiB
// over the storm, sampled after every post, proves none was hashed; the
// address is soon refused unchecked (429 with Retry-After). Not parallel:
// other tests' sign-ins hash passwords too.
func TestSetupStormBoundedMemory(t *testing.T) {
	h := servertest.Start(t, "", servertest.Options{})
	if h.Server.SetupCode == "" {
		t.Fatal("no setup code on a new server")
	}
	runtime.GC()
	debug.FreeOSMemory()
	base := vmRSS(t)
	peak := base
	codes := map[int]int{}
	for i := range 200 {
		resp, err := http.PostForm(h.URL+"/admin/setup", url.Values{"code": {fmt.Sprint("bogus", i)}, "email": {"mallory@example.org"},
			"password": {"correct horse battery staple " + strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		peak = max(peak, vmRSS(t))
	}
	const bound = 32 << 20
	t.Logf("resident memory %d MiB before, peak %d MiB during 200 bogus setup posts; answers %v", base>>20, peak>>20, codes)
	if peak-base >= bound {
		t.Errorf("resident memory grew by %d MiB during the storm, want under %d MiB (one password hash is 64 MiB)", (peak-base)>>20, bound>>20)
	}
	if codes[400] == 0 || codes[429] == 0 || codes[400]+codes[429] != 200 {
		t.Errorf("answers %v: want 400 setup-invalid, then 429 once the address's budget is spent", codes)
	}
}

const secretForms = `
id: fair-s
site: a
fields:
  - {name: name, type: text, required: true}
capacity: 5
notify:
  webhooks:
    - url: https://crm.example.org/hooks/formd
      secret: whsec_q34kJFQczrcoMv52M4guwMGh+pB2dIm5zcze4+jLfjk=
`

// TestSecretsShownOnlyToOwners: the definition (API and console editor)
// shows the webhook secret to an owner only; an editor and a viewer see
// the placeholder, and an editor sending the placeholder back keeps the
// stored secret. The audit log never holds it.
func TestSecretsShownOnlyToOwners(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, secretForms, servertest.Options{})
	const secret = "whsec_q34kJFQczrcoMv52M4guwMGh"
	owner := signIn(t, h, "owner@example.org", accounts.Owner, "a")
	editor := signIn(t, h, "editor@example.org", accounts.Editor, "a")
	viewer := signIn(t, h, "viewer@example.org", accounts.Viewer, "a")
	for _, tc := range []struct {
		name string
		b    *browser
		path string
		want bool
	}{
		{"owner, API", owner, "/v1/admin/forms/fair-s/definition", true},
		{"owner, editor page", owner, "/admin/forms/fair-s/edit", true},
		{"editor, API", editor, "/v1/admin/forms/fair-s/definition", false},
		{"editor, editor page", editor, "/admin/forms/fair-s/edit", false},
		{"viewer, API", viewer, "/v1/admin/forms/fair-s/definition", false},
	} {
		code, body := tc.b.do("GET", tc.path, nil)
		if code != 200 || strings.Contains(body, secret) != tc.want || (!tc.want && !strings.Contains(body, "(hidden)")) {
			t.Errorf("%s: %d, secret shown %v, want %v:\n%.1500s", tc.name, code, strings.Contains(body, secret), tc.want, body)
		}
	}
	// The editor saves the masked text with a change: the secret stays.
	editor.do("GET", "/admin/forms/fair-s/edit", nil)
	_, def := editor.do("GET", "/v1/admin/forms/fair-s/definition", nil)
	changed := strings.Replace(def, "capacity: 5", "capacity: 6", 1)
	token := confirmAt(t, editor, "fair-s", changed) // capacity changes: the confirm step first
	if code, body := editor.do("POST", "/admin/forms/fair-s/edit", url.Values{"definition": {changed}, "confirm": {token}}); code != 200 || !strings.Contains(body, "The definition was saved.") {
		t.Fatalf("editor saves the masked definition: %d %.2000s", code, body)
	}
	if _, body := owner.do("GET", "/v1/admin/forms/fair-s/definition", nil); !strings.Contains(body, secret) || !strings.Contains(body, "capacity: 6") {
		t.Fatalf("after the editor's save the owner reads:\n%s", body)
	}
	// A hidden secret for a url without one is refused, saying why.
	moved := strings.Replace(changed, "crm.example.org", "other.example.org", 1)
	editor.do("GET", "/admin/forms/fair-s/edit", nil)
	if code, body := editor.do("POST", "/admin/forms/fair-s/edit", url.Values{"definition": {moved}}); code != 422 || !strings.Contains(body, "no stored secret to keep") {
		t.Fatalf("a hidden secret for a new url: %d %.2000s", code, body)
	}
	if f := h.Server.Forms.Get("fair-s"); f.Def.Notify.Webhooks[0].URL != "https://crm.example.org/hooks/formd" {
		t.Fatalf("the refused definition was applied: %+v", f.Def.Notify.Webhooks)
	}
	if _, body := owner.do("GET", "/v1/admin/audit-log?limit=500", nil); strings.Contains(body, "whsec_") || !strings.Contains(body, "forms.apply") {
		t.Fatalf("the audit log:\n%s", body)
	}
}

// TestNoFreeTextFromTheURL: a page shows only its own status messages,
// never text from ?done= (or ids that are not ids from ?promoted=).
func TestNoFreeTextFromTheURL(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "o@example.org", accounts.Owner, "*")
	for _, path := range []string{
		"/admin/forms?done=" + url.QueryEscape("Re-enter your password at https://evil.example"),
		"/admin/forms/fair-a?done=saved&promoted=" + url.QueryEscape("<b>Re-enter</b> at https://evil.example"),
		"/admin/login?done=" + url.QueryEscape("Re-enter your password at https://evil.example"),
	} {
		code, body := b.do("GET", path, nil)
		if code != 200 || strings.Contains(body, "evil.example") || strings.Contains(body, "Re-enter") {
			t.Errorf("GET %s: %d, shows the URL's text:\n%.1500s", path, code, body)
		}
	}
	if _, body := b.do("GET", "/admin/forms/fair-a?done=saved", nil); !strings.Contains(body, "The definition was saved.") {
		t.Error("a known message code is not shown")
	}
}

// TestBadInputIs4xx: input a signed-in account can send that once made
// 500s is refused with 4xx naming the problem.
func TestBadInputIs4xx(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "o@example.org", accounts.Owner, "*")
	submit(t, h, "fair-a", `{"name":"Ann","phone":"13800138000"}`)
	long := strings.Repeat("n", accounts.MaxTokenName+1)
	a, err := h.Server.Accounts.AccountByEmail(context.Background(), accounts.Operator("test"), "o@example.org")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		form         url.Values
		json         string
		want         int
		says         string
	}{
		{"GET", "/v1/admin/forms/fair-a/entries?before=18446744073709551615:e1", nil, "", 400, "before must be"},
		{"GET", "/v1/admin/forms/fair-a/submissions?before=9223372036854775808:e1", nil, "", 400, "before must be"},
		{"GET", "/admin/forms/fair-a/submissions?before=18446744073709551615:e1", nil, "", 400, "before must be"},
		{"GET", "/v1/admin/audit-log?before=99999999999999999999", nil, "", 400, "before must be"},
		{"GET", "/admin/audit?before=-1", nil, "", 400, "before must be"},
		{"POST", "/v1/admin/accounts/" + a.ID + "/tokens", nil, `{"name":"` + long + `"}`, 400, "1 to 100 characters"},
		{"POST", "/admin/tokens", url.Values{"name": {long}}, "", 400, "1 to 100 characters"},
	} {
		var code int
		var body string
		if tc.json != "" {
			code, body = b.doJSON(tc.method, tc.path, tc.json)
		} else {
			b.do("GET", "/admin/accounts", nil)
			code, body = b.do(tc.method, tc.path, tc.form)
		}
		if code != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("%s %s: %d, want %d saying %q:\n%.800s", tc.method, tc.path, code, tc.want, tc.says, body)
		}
	}
}

// doJSON sends a JSON body with the session's CSRF header.
func (b *browser) doJSON(method, path, body string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(accounts.CSRFHeader, b.csrf)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func newJarClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

// TestAdminTokenInTheConsole: the admin token printed at first start is
// listed with the first owner's tokens and revoked from the console.
func TestAdminTokenInTheConsole(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "o@example.org", accounts.Owner, "*")
	api := func() int {
		code, _ := adminAPI(t, h, "GET", "/v1/admin/forms", "")
		return code
	}
	if api() != 200 {
		t.Fatal("the admin token does not work")
	}
	_, body := b.do("GET", "/admin/accounts", nil)
	if !strings.Contains(body, `aria-label="Revoke the token admin token"`) || !regexp.MustCompile(`admin token <code class="muted">admin</code></td><td>o@example.org`).MatchString(body) {
		t.Fatalf("the accounts page does not list the admin token as o@'s:\n%.4000s", body)
	}
	if code, body := b.do("POST", "/admin/tokens/admin/revoke", url.Values{}); code != 200 || !strings.Contains(body, "The token was revoked.") {
		t.Fatalf("revoke the admin token: %d %.1000s", code, body)
	}
	if code := api(); code != 401 {
		t.Fatalf("the revoked admin token: %d, want 401", code)
	}
}

// TestPasswordChangeAndReset: change one's own password (the other
// session ends), an owner's reset link sets another's password once, and
// sign-out everywhere ends every session.
func TestPasswordChangeAndReset(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	owner := signIn(t, h, "o@example.org", accounts.Owner, "*")
	ed := signIn(t, h, "ed@example.org", accounts.Editor, "a")
	ed2 := login(t, h, "ed@example.org", "correct horse battery staple")
	ed.do("GET", "/admin/account", nil)
	if code, body := ed.do("POST", "/admin/account/password", url.Values{"current": {"wrong password!"}, "password": {"a much newer secret"}}); code != 401 || !strings.Contains(body, "the current password is wrong") {
		t.Fatalf("change with a wrong current password: %d %.1500s", code, body)
	}
	code, body := ed.do("POST", "/admin/account/password", url.Values{"current": {"correct horse battery staple"}, "password": {"a much newer secret"}})
	if code != 200 || !strings.Contains(body, "Your password was changed") {
		t.Fatalf("change password: %d %.1500s", code, body)
	}
	if code, body := ed2.do("GET", "/admin/forms", nil); code != 200 || !strings.Contains(body, `action="/admin/login"`) {
		t.Fatalf("the other session after the change: %d, want the sign-in page", code)
	}
	// The owner makes a reset link for ed; it is shown once and works once.
	a, err := h.Server.Accounts.AccountByEmail(context.Background(), accounts.Operator("test"), "ed@example.org")
	if err != nil {
		t.Fatal(err)
	}
	owner.do("GET", "/admin/accounts", nil)
	code, body = owner.do("POST", "/admin/accounts/"+a.ID+"/reset", url.Values{})
	m := regexp.MustCompile(`id="resetlink" readonly value="([^"]+)"`).FindStringSubmatch(body)
	if code != 201 || m == nil {
		t.Fatalf("make a reset link: %d %.3000s", code, body)
	}
	link := strings.ReplaceAll(m[1], "&amp;", "&")
	anon := login(t, h, "", "")
	if code, body := anon.do("GET", strings.TrimPrefix(link, h.URL), nil); code != 200 || !strings.Contains(body, "ed@example.org") {
		t.Fatalf("open the reset link: %d %.1500s", code, body)
	}
	resetCode := strings.TrimPrefix(link, h.URL+"/admin/reset?code=")
	resetCode, _ = url.QueryUnescape(resetCode)
	if code, body := anon.do("POST", "/admin/reset", url.Values{"code": {resetCode}, "password": {"the reset secret!"}}); code != 200 || !strings.Contains(body, "Your password was set.") {
		t.Fatalf("use the reset link: %d %.1500s", code, body)
	}
	if code, _ := anon.do("POST", "/admin/reset", url.Values{"code": {resetCode}, "password": {"another reset secret"}}); code != 400 {
		t.Fatalf("the used link again: %d, want 400", code)
	}
	if code, body := ed.do("GET", "/admin/forms", nil); code != 200 || !strings.Contains(body, `action="/admin/login"`) {
		t.Fatal("ed's session survived the reset")
	}
	ed = login(t, h, "ed@example.org", "the reset secret!")
	ed3 := login(t, h, "ed@example.org", "the reset secret!")
	ed.do("GET", "/admin/account", nil)
	if code, body := ed.do("POST", "/admin/account/sign-out-everywhere", url.Values{}); code != 200 || !strings.Contains(body, "You are signed out on every device.") {
		t.Fatalf("sign out everywhere: %d %.1000s", code, body)
	}
	if code, body := ed3.do("GET", "/admin/forms", nil); code != 200 || !strings.Contains(body, `action="/admin/login"`) {
		t.Fatal("another session survived signing out everywhere")
	}
}

// login signs in an existing account (or, with no e-mail, makes a browser
// that is signed out).
func login(t *testing.T, h *servertest.Harness, email, password string) *browser {
	t.Helper()
	b := &browser{t: t, base: h.URL, c: newJarClient()}
	if email == "" {
		return b
	}
	code, body := b.do("POST", "/admin/login", url.Values{"email": {email}, "password": {password}, "next": {"/admin/forms"}})
	if code != 200 || !strings.Contains(body, "Sign out") {
		t.Fatalf("sign in as %s: %d %.1000s", email, code, body)
	}
	return b
}
