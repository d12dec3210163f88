package console_test

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
)

// TestForeignOriginPostRefused is issue 30's finding: a console POST
// with a valid CSRF token but another site's Origin was accepted. It is
// refused (403, nothing done); the console's own Origin, or none, works.
func TestForeignOriginPostRefused(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	owner := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	a, err := h.Server.Accounts.AddAccount(context.Background(), accounts.Operator("test"), accounts.NewAccount{
		Email: "ed@example.org", Role: accounts.Editor, Sites: []string{"a"}, Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	owner.do("GET", "/admin/accounts", nil)
	for _, hdr := range []http.Header{
		{"Origin": {"https://evil.example"}},
		{"Origin": {"null"}},
		{"Sec-Fetch-Site": {"cross-site"}},
	} {
		owner.hdr = hdr
		code, body := owner.do("POST", "/admin/accounts/"+a.ID+"/reset", url.Values{})
		if code != http.StatusForbidden || strings.Contains(body, `id="resetlink"`) {
			t.Fatalf("POST with %v and a valid CSRF token: %d", hdr, code)
		}
		owner.do("GET", "/admin/accounts", nil)
	}
	owner.hdr = http.Header{"Origin": {h.URL}}
	if code, body := owner.do("POST", "/admin/accounts/"+a.ID+"/reset", url.Values{}); code != http.StatusCreated || !strings.Contains(body, `id="resetlink"`) {
		t.Fatalf("POST from the console's own origin: %d", code)
	}
}

var resetLink = regexp.MustCompile(`id="resetlink" readonly value="([^"]+)"`)

// TestResetLinkBehindAProxy is issue 30's finding: behind a TLS proxy the
// reset link came out http:// from the request's Host. It starts with
// --public-url when set; without it, https comes only from TLS or a
// trusted proxy's X-Forwarded-Proto, never from anyone else's.
func TestResetLinkBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		public string
		trust  bool
		want   string // the link's start; %s is the test server's host
	}{
		{"public URL", "https://forms.example.org/", false, "https://forms.example.org/admin/reset?code="},
		{"trusted proxy", "", true, "https://%s/admin/reset?code="},
		{"untrusted X-Forwarded-Proto", "", false, "http://%s/admin/reset?code="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) {
				c.PublicURL = tc.public
				if tc.trust {
					c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
				}
			}})
			owner := signIn(t, h, "owner@example.org", accounts.Owner, "*")
			a, err := h.Server.Accounts.AddAccount(context.Background(), accounts.Operator("test"), accounts.NewAccount{
				Email: "ed@example.org", Role: accounts.Editor, Sites: []string{"a"}, Password: "correct horse battery staple"})
			if err != nil {
				t.Fatal(err)
			}
			owner.hdr = http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-For": {"203.0.113.5"}}
			owner.do("GET", "/admin/accounts", nil)
			code, body := owner.do("POST", "/admin/accounts/"+a.ID+"/reset", url.Values{})
			m := resetLink.FindStringSubmatch(body)
			if code != http.StatusCreated || m == nil {
				t.Fatalf("make a reset link: %d", code)
			}
			want := strings.Replace(tc.want, "%s", strings.TrimPrefix(h.URL, "http://"), 1)
			if link := strings.ReplaceAll(m[1], "&amp;", "&"); !strings.HasPrefix(link, want) {
				t.Fatalf("reset link %s, want it to start %s", link, want)
			}
		})
	}
}
