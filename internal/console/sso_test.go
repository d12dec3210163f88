package console_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/accounts/sso"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/crypto"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// provider is zitadel's example OpenID Provider (a real, certified OP
// library with its example storage and login page), run in-process. The
// test changes only what its storage tells the OP: the people, their
// groups claim, and for some cases the audience or the lifetime of the ID
// tokens it issues.
type provider struct {
	*storage.Storage
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	redirect string
	audience []string
	lifetime time.Duration
}

type people map[string]*storage.User

func (p people) GetUserByID(id string) *storage.User { return p[id] }
func (p people) GetUserByUsername(name string) *storage.User {
	for _, u := range p {
		if u.Username == name {
			return u
		}
	}
	return nil
}
func (p people) ExampleClientID() string { return "service" }

// groups are the people's groups claim, by user id.
var groups = map[string][]string{"ann": {"formd-admins"}, "bob": {"staff", "fair-team"}, "carl": {"staff"}}

func startProvider(t *testing.T) *provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	users := people{}
	for _, u := range []struct {
		id, email string
		verified  bool
	}{{"ann", "ann@example.org", true}, {"bob", "bob@example.org", true}, {"carl", "carl@example.org", true}, {"dora", "dora@example.org", false}} {
		users[u.id] = &storage.User{ID: u.id, Username: u.id, Password: "verysecure", FirstName: u.id, LastName: "Test",
			Email: u.email, EmailVerified: u.verified}
	}
	p := &provider{URL: "http://" + ln.Addr().String()}
	p.Storage = storage.NewStorageWithClients(users, map[string]*storage.Client{
		"formd": storage.WebClient("formd", "formd-secret", "http://unused/"),
	})
	p.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: p.otherAudience(exampleop.SetupServer(p.URL, p, nil, false))}}
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

// SetUserinfoFromRequest adds the groups claim to the ID token.
func (p *provider) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := p.Storage.SetUserinfoFromRequest(ctx, ui, req, scopes); err != nil {
		return err
	}
	if g, ok := groups[req.GetSubject()]; ok {
		ui.AppendClaims("groups", g)
	}
	return nil
}

// GetClientByClientID gives formd's client its redirect URI (known once
// formd listens), user info in the ID token, and the test's lifetime.
func (p *provider) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := p.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return client{c, p}, nil
}

// otherAudience, when a case sets p.audience, has the OP's token
// endpoint answer with an ID token for another client: the one it issued,
// its aud and azp replaced, signed again with the OP's own signing key
// (the one its JWKS publishes), as a provider misconfigured for another
// client would issue it.
func (p *provider) otherAudience(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		aud := p.audience
		p.mu.Unlock()
		if aud == nil || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["id_token"] == nil {
			http.Error(w, "no id_token to re-sign", 500)
			return
		}
		parts := strings.Split(body["id_token"].(string), ".")
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]any
		_ = json.Unmarshal(raw, &claims)
		claims["aud"], claims["azp"] = aud, aud[0]
		key, _ := p.Storage.SigningKey(r.Context())
		signer, err := op.SignerFromKey(key)
		if err == nil {
			body["id_token"], err = crypto.Sign(claims, signer)
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

type client struct {
	op.Client
	p *provider
}

func (c client) RedirectURIs() []string {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return []string{c.p.redirect}
}
func (c client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c client) IDTokenLifetime() time.Duration {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.p.lifetime != 0 {
		return c.p.lifetime
	}
	return c.Client.IDTokenLifetime()
}

func (p *provider) set(f func(p *provider)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func ssoConfig(p *provider, create bool) func(*config.Config) {
	return func(c *config.Config) {
		c.OIDC = sso.Settings{Issuer: p.URL, ClientID: "formd", ClientSecret: "formd-secret", Name: "Staff ID", RoleClaim: "groups",
			Rules: []sso.Rule{{Value: "formd-admins", Role: accounts.Owner, Sites: []string{"*"}},
				{Value: "fair-team", Role: accounts.Editor, Sites: []string{"a"}}},
			CreateAccounts: create}
	}
}

// ssoBrowser is a browser with a cookie jar that stops before formd's
// callback, so that a case can look at (or replay) the callback URL.
func ssoBrowser(t *testing.T, h *servertest.Harness) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: h.URL, c: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
}

var idRe = regexp.MustCompile(`name="id" value="([^"]+)"`)

// toCallback presses "Sign in with Staff ID" on formd's sign-in page,
// signs in at the provider's login page as user, and returns the URL the
// provider sends the browser back to formd with (not followed).
func toCallback(t *testing.T, b *browser, user string) *url.URL {
	t.Helper()
	code, page := b.do("GET", "/admin/login", nil)
	m := regexp.MustCompile(`<a class="button" href="([^"]+)">Sign in with Staff ID</a>`).FindStringSubmatch(page)
	if code != 200 || m == nil {
		t.Fatalf("sign-in page has no 'Sign in with Staff ID' link: %d %s", code, page)
	}
	start := strings.ReplaceAll(m[1], "&amp;", "&")
	stop := func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == sso.CallbackPath {
			return http.ErrUseLastResponse
		}
		return nil
	}
	b.c.CheckRedirect = stop
	defer func() { b.c.CheckRedirect = nil }()
	resp, err := b.c.Get(b.base + start)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := idRe.FindSubmatch(raw)
	if id == nil {
		t.Fatalf("the provider's login page: %d %s", resp.StatusCode, raw)
	}
	resp, err = b.c.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/login/username",
		url.Values{"id": {string(id[1])}, "username": {user}, "password": {"verysecure"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || loc.Path != sso.CallbackPath {
		t.Fatalf("the provider did not send the browser back to formd: %d %v", resp.StatusCode, loc)
	}
	return loc
}

// finish follows the callback URL in b and returns the page formd ends
// on.
func finish(b *browser, callback *url.URL) (int, string) {
	b.t.Helper()
	return b.do("GET", callback.RequestURI(), nil)
}

func TestSingleSignOn(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	h := servertest.Start(t, forms, servertest.Options{Config: ssoConfig(p, true)})
	p.set(func(p *provider) { p.redirect = h.URL + sso.CallbackPath })
	ctx := context.Background()
	// Ann has a local account (a viewer of b): matched by her verified
	// e-mail, she becomes what the mapping says (owner of every site).
	if _, err := h.Server.Accounts.AddAccount(ctx, accounts.Operator("test"), accounts.NewAccount{
		Email: "ann@example.org", Role: accounts.Viewer, Sites: []string{"b"}, Password: "correct horse battery staple"}); err != nil {
		t.Fatal(err)
	}

	t.Run("good sign-in matches by e-mail and maps the role", func(t *testing.T) {
		b := ssoBrowser(t, h)
		code, page := finish(b, toCallback(t, b, "ann"))
		if code != 200 || !strings.Contains(page, "Sign out") {
			t.Fatalf("after the callback: %d %s", code, page)
		}
		a, err := h.Server.Accounts.AccountByEmail(ctx, accounts.Operator("test"), "ann@example.org")
		if err != nil || a.Role != accounts.Owner || strings.Join(a.Sites, ",") != "*" {
			t.Fatalf("ann's account after sign-in: %+v %v", a, err)
		}
		// Signing out ends formd's session: the cookie no longer opens a
		// page.
		if code, _ := b.do("POST", "/admin/logout", url.Values{}); code != 200 {
			t.Fatalf("sign out: %d", code)
		}
		if code, page := b.do("GET", "/admin/forms", nil); !strings.Contains(page, `action="/admin/login"`) {
			t.Fatalf("after sign-out the console still opens: %d", code)
		}
	})

	t.Run("unknown verified e-mail gets an account by the rule", func(t *testing.T) {
		b := ssoBrowser(t, h)
		code, page := finish(b, toCallback(t, b, "bob"))
		if code != 200 || !strings.Contains(page, "Sign out") {
			t.Fatalf("bob: %d %s", code, page)
		}
		a, err := h.Server.Accounts.AccountByEmail(ctx, accounts.Operator("test"), "bob@example.org")
		if err != nil || a.Role != accounts.Editor || strings.Join(a.Sites, ",") != "a" {
			t.Fatalf("bob's account: %+v %v", a, err)
		}
		if code, _ := b.do("GET", "/admin/forms/fair-b", nil); code != 404 {
			t.Fatalf("bob (editor of a) opened a form of b: %d", code)
		}
	})

	t.Run("no mapped role gets nothing", func(t *testing.T) {
		b := ssoBrowser(t, h)
		code, page := finish(b, toCallback(t, b, "carl"))
		if code != 403 || !strings.Contains(page, "No access") || strings.Contains(page, "Sign out") {
			t.Fatalf("carl: %d %s", code, page)
		}
		if _, err := h.Server.Accounts.AccountByEmail(ctx, accounts.Operator("test"), "carl@example.org"); !errors.Is(err, accounts.ErrNotFound) {
			t.Fatalf("an account was made for carl: %v", err)
		}
	})

	t.Run("unverified e-mail gets nothing", func(t *testing.T) {
		b := ssoBrowser(t, h)
		if code, page := finish(b, toCallback(t, b, "dora")); code != 403 || strings.Contains(page, "Sign out") {
			t.Fatalf("dora: %d %s", code, page)
		}
	})

	t.Run("state mismatch", func(t *testing.T) {
		b := ssoBrowser(t, h)
		cb := toCallback(t, b, "ann")
		q := cb.Query()
		q.Set("state", "forged")
		cb.RawQuery = q.Encode()
		if code, page := finish(b, cb); code != 400 || !strings.Contains(page, "sso-failed") {
			t.Fatalf("forged state: %d %s", code, page)
		}
	})

	t.Run("a callback in another browser", func(t *testing.T) {
		cb := toCallback(t, ssoBrowser(t, h), "ann")
		if code, _ := finish(ssoBrowser(t, h), cb); code != 400 {
			t.Fatalf("a callback without the flow cookie: %d", code)
		}
	})

	t.Run("replayed code", func(t *testing.T) {
		b := ssoBrowser(t, h)
		cb := toCallback(t, b, "ann")
		flow := b.c.Jar.Cookies(cb)
		if code, _ := finish(b, cb); code != 200 {
			t.Fatalf("first use of the code: %d", code)
		}
		// The same callback again, flow cookie and all, in a fresh
		// browser: the provider refuses a code used once.
		again := ssoBrowser(t, h)
		again.c.Jar.SetCookies(cb, flow)
		if code, page := finish(again, cb); code != 400 || !strings.Contains(page, "sso-failed") || strings.Contains(page, "Sign out") {
			t.Fatalf("replayed code: %d %s", code, page)
		}
	})

	t.Run("wrong audience", func(t *testing.T) {
		p.set(func(p *provider) { p.audience = []string{"another-client"} })
		defer p.set(func(p *provider) { p.audience = nil })
		b := ssoBrowser(t, h)
		if code, page := finish(b, toCallback(t, b, "ann")); code != 400 || !strings.Contains(page, "audience") {
			t.Fatalf("ID token for another client: %d %s", code, page)
		}
	})

	t.Run("expired token", func(t *testing.T) {
		p.set(func(p *provider) { p.lifetime = -time.Minute })
		defer p.set(func(p *provider) { p.lifetime = 0 })
		b := ssoBrowser(t, h)
		if code, page := finish(b, toCallback(t, b, "ann")); code != 400 || !strings.Contains(page, "expired") {
			t.Fatalf("expired ID token: %d %s", code, page)
		}
	})

	t.Run("provider down later", func(t *testing.T) {
		b := ssoBrowser(t, h)
		cb := toCallback(t, b, "ann")
		p.srv.Close()
		if code, page := finish(b, cb); code != 502 || !strings.Contains(page, "sso-unavailable") {
			t.Fatalf("provider down at the code exchange: %d %s", code, page)
		}
		// Passwords still work.
		signIn(t, h, "eve@example.org", accounts.Viewer, "a")
	})
}

// TestSingleSignOnProviderDownAtStart: discovery fails, and the start-up
// error names the setting and what discovery said.
func TestSingleSignOnProviderDownAtStart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	ln.Close()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.OIDC = sso.Settings{Issuer: issuer, ClientID: "formd", RoleClaim: "groups", Rules: []sso.Rule{{Value: "x", Role: accounts.Viewer, Sites: []string{"*"}}}}
	_, err = server.Open(context.Background(), cfg, discard())
	if err == nil || !strings.Contains(err.Error(), "--oidc-issuer") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("start with the provider down: %v", err)
	}
	// A provider whose discovery names another issuer.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"https://elsewhere.example","authorization_endpoint":"https://elsewhere.example/auth","token_endpoint":"https://elsewhere.example/token","jwks_uri":"https://elsewhere.example/keys"}`)
	}))
	defer other.Close()
	cfg.OIDC.Issuer = other.URL
	_, err = server.Open(context.Background(), cfg, discard())
	if err == nil || !strings.Contains(err.Error(), "--oidc-issuer") || !strings.Contains(err.Error(), "https://elsewhere.example") {
		t.Fatalf("start with a provider naming another issuer: %v", err)
	}
}

// TestPasswordSignInOff: with password sign-in off, only the break-glass
// owner signs in with a password.
func TestPasswordSignInOff(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) {
		ssoConfig(p, false)(c)
		c.PasswordSignIn, c.BreakGlass = false, "root@example.org"
	}})
	ctx := context.Background()
	for _, e := range []string{"root@example.org", "ed@example.org"} {
		if _, err := h.Server.Accounts.AddAccount(ctx, accounts.Operator("test"), accounts.NewAccount{
			Email: e, Role: accounts.Owner, Sites: []string{"*"}, Password: "correct horse battery staple"}); err != nil {
			t.Fatal(err)
		}
	}
	b := ssoBrowser(t, h)
	code, page := b.do("POST", "/admin/login", url.Values{"email": {"ed@example.org"}, "password": {"correct horse battery staple"}})
	if code != 403 || strings.Contains(page, "Sign out") {
		t.Fatalf("password sign-in of a non-break-glass owner: %d", code)
	}
	code, page = b.do("POST", "/admin/login", url.Values{"email": {"root@example.org"}, "password": {"correct horse battery staple"}, "next": {"/admin/forms"}})
	if code != 200 || !strings.Contains(page, "Sign out") {
		t.Fatalf("break-glass sign-in: %d", code)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
