package storetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store"
)

// AccountsStore is a store driver that keeps the console's accounts.
type AccountsStore interface {
	accounts.Store
	PutToken(ctx context.Context, name string, hash []byte, unlessUsed bool) (bool, error)
	Close() error
}

// RunAccounts runs the accounts suite: the rules of package accounts
// (unique e-mail, token revocation, session expiry, single-use setup
// codes, sign-in limits, audit paging, scopes), through accounts.Service
// on the real database, with a test clock.
func RunAccounts(t *testing.T, newStore Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, *accountsEnv)
	}{
		{"UniqueEmailUnderConcurrency", testUniqueEmail},
		{"AccountChanges", testAccountChanges},
		{"APITokens", testAPITokens},
		{"LegacyAdminToken", testLegacyToken},
		{"AdminTokenOwnedListedRevocable", testAdminTokenOwned},
		{"AdminTokenMadeAfterTheFirstOwner", testAdminTokenMadeLate},
		{"TokenMadeForAnotherNamesItsMaker", testTokenMaker},
		{"SessionExpiry", testSessionExpiry},
		{"SessionCookieAndCSRF", testSessionCookie},
		{"LoginRateLimit", testLoginLimit},
		{"LoginStormCannotLockOwnerOut", testLoginStorm},
		{"GuessesFromManyAddressesDoNotAddUp", testLoginManyAddresses},
		{"LoginAttemptsCountUnderConcurrency", testLoginConcurrent},
		{"PasswordRehash", testRehash},
		{"SetupCodeSingleUse", testSetupCode},
		{"SetupRefusedOnceAnAccountExists", testSetupDone},
		{"SetupBudgetPerAddress", testSetupBudget},
		{"PasswordChange", testPasswordChange},
		{"PasswordResetLink", testPasswordReset},
		{"SignOutEverywhere", testSignOutEverywhere},
		{"AuditPaging", testAuditPaging},
		{"ScopeEnforced", testScope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, nil)()
			t.Cleanup(func() { s.Close() })
			as, ok := s.(AccountsStore)
			if !ok {
				t.Fatalf("store driver %T does not implement accounts.Store", s)
			}
			tc.fn(t, newAccountsEnv(t, as))
		})
	}
}

// fastParams keep argon2id quick in tests; the rules do not depend on the
// cost.
var fastParams = accounts.Params{Memory: 64, Time: 1, Threads: 1}

const password = "correct horse battery"

// testClock is a clock that moves only when told.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type accountsEnv struct {
	st    AccountsStore
	clock *testClock
	svc   *accounts.Service
	ctx   context.Context
	op    accounts.Principal
}

func newAccountsEnv(t *testing.T, st AccountsStore) *accountsEnv {
	clock := &testClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	return &accountsEnv{st: st, clock: clock, ctx: ctxT(t), op: accounts.Operator("storetest"),
		svc: accounts.New(st, accounts.Config{Now: clock.Now, Password: fastParams})}
}

func (e *accountsEnv) add(t *testing.T, email string, role accounts.Role, sites ...string) accounts.Account {
	t.Helper()
	a, err := e.svc.AddAccount(e.ctx, e.op, accounts.NewAccount{Email: email, Role: role, Sites: sites, Password: password})
	if err != nil {
		t.Fatalf("add account %s: %v", email, err)
	}
	return a
}

// request makes a request carrying the cookies a response set.
func request(method, target string, from *httptest.ResponseRecorder) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	if from != nil {
		for _, c := range from.Result().Cookies() {
			r.AddCookie(c)
		}
	}
	return r
}

// signIn logs in and starts a session, returning the response that set
// its cookie.
func (e *accountsEnv) signIn(t *testing.T, email string) (*httptest.ResponseRecorder, accounts.Principal) {
	t.Helper()
	a, err := e.svc.Login(e.ctx, email, password, "192.0.2.1")
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	w := httptest.NewRecorder()
	p, err := e.svc.IssueSession(w, httptest.NewRequest("POST", "/admin/login", nil), a)
	if err != nil {
		t.Fatalf("issue session: %v", err)
	}
	return w, p
}

func (e *accountsEnv) audit(t *testing.T, action string) []accounts.Entry {
	t.Helper()
	all, err := e.svc.Audit(e.ctx, e.op, accounts.AuditFilter{Limit: accounts.MaxAuditLimit})
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	var out []accounts.Entry
	for _, en := range all {
		if en.Action == action {
			out = append(out, en)
		}
	}
	return out
}

// Many adds of one e-mail at once, in different spellings: the unique
// index lets exactly one in.
func testUniqueEmail(t *testing.T, e *accountsEnv) {
	spellings := []string{"Ann@Example.com", " ann@example.com", "ANN@EXAMPLE.COM ", "ann@example.com"}
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.svc.AddAccount(e.ctx, e.op, accounts.NewAccount{Email: spellings[i%len(spellings)], Role: accounts.Viewer,
				Sites: []string{"a"}, Password: password})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, accounts.ErrEmailTaken):
			t.Fatalf("concurrent add: %v, want ErrEmailTaken", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d adds of one e-mail succeeded, want 1", ok)
	}
	all, err := e.st.ListAccounts(e.ctx)
	if err != nil || len(all) != 1 || all[0].Email != "ann@example.com" {
		t.Fatalf("accounts %+v, %v: want one, ann@example.com", all, err)
	}
	if n := len(e.audit(t, "account.add")); n != 1 {
		t.Fatalf("%d account.add audit entries, want 1 (refused adds record nothing)", n)
	}
	// The store refuses a taken e-mail by itself too.
	err = e.st.CreateAccount(e.ctx, accounts.Account{ID: "other", Email: "ann@example.com", Role: accounts.Owner, Sites: []string{"*"}}, accounts.Entry{})
	if !errors.Is(err, accounts.ErrEmailTaken) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("store insert of a taken e-mail: %v, want ErrEmailTaken only", err)
	}
}

func testAccountChanges(t *testing.T, e *accountsEnv) {
	a := e.add(t, "Bob@example.com", accounts.Editor, "b", "a", "a")
	if a.Email != "bob@example.com" || !slices.Equal(a.Sites, []string{"a", "b"}) || a.PasswordHash != "" {
		t.Fatalf("added %+v: want normalized e-mail, sorted unique sites, no hash handed out", a)
	}
	got, err := e.st.AccountByID(e.ctx, a.ID)
	if err != nil || got.Email != a.Email || got.Role != accounts.Editor || !slices.Equal(got.Sites, a.Sites) ||
		!got.CreatedAt.Equal(e.clock.Now()) || !strings.HasPrefix(got.PasswordHash, "$argon2id$v=19$m=64,t=1,p=1$") || got.Disabled {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if byEmail, err := e.st.AccountByEmail(e.ctx, "bob@example.com"); err != nil || byEmail.ID != a.ID {
		t.Fatalf("by e-mail: %+v %v", byEmail, err)
	}
	if _, err := e.st.AccountByID(e.ctx, "nobody"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("unknown id: %v, want ErrNotFound", err)
	}
	if _, err := e.st.AccountByEmail(e.ctx, "nobody@example.com"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("unknown e-mail: %v, want ErrNotFound", err)
	}
	e.clock.Advance(time.Minute)
	changed, err := e.svc.ChangeRole(e.ctx, e.op, a.ID, accounts.Viewer, []string{"c"})
	if err != nil || changed.Role != accounts.Viewer || !slices.Equal(changed.Sites, []string{"c"}) || !changed.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("change role: %+v %v", changed, err)
	}
	if _, err := e.svc.ChangeRole(e.ctx, e.op, "nobody", accounts.Viewer, []string{"c"}); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("change role of unknown: %v", err)
	}
	if _, err := e.st.UpdateAccount(e.ctx, "nobody", accounts.Change{At: e.clock.Now()}, accounts.Entry{}); !errors.Is(err, accounts.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("store update of unknown: %v, want ErrNotFound only", err)
	}
	// Disabling ends the account's sessions and refuses its sign-in with
	// the same answer as a wrong password.
	w, _ := e.signIn(t, "bob@example.com")
	if _, err := e.svc.SetDisabled(e.ctx, e.op, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(request("GET", "/admin/", w)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("session of a disabled account: %v, want ErrUnauthenticated", err)
	}
	if _, _, err := e.st.SessionByHash(e.ctx, accounts.HashToken(w.Result().Cookies()[0].Value)); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("session row of a disabled account: %v, want it deleted", err)
	}
	if _, err := e.svc.Login(e.ctx, "bob@example.com", password, "192.0.2.1"); !errors.Is(err, accounts.ErrBadCredentials) {
		t.Fatalf("login of a disabled account: %v, want ErrBadCredentials", err)
	}
	if _, err := e.svc.SetDisabled(e.ctx, e.op, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SetPassword(e.ctx, e.op, a.ID, "short"); !errors.Is(err, accounts.ErrPasswordTooShort) {
		t.Fatalf("short password: %v", err)
	}
	if err := e.svc.SetPassword(e.ctx, e.op, a.ID, "a new password here"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Login(e.ctx, "bob@example.com", "a new password here", "192.0.2.1"); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	for _, action := range []string{"account.add", "account.role", "account.disable", "account.enable", "account.password", "login", "session.start"} {
		if len(e.audit(t, action)) == 0 {
			t.Errorf("no %s in the audit log", action)
		}
	}
}

func bearer(scheme, token string) *http.Request {
	r := httptest.NewRequest("GET", "/v1/admin/forms", nil)
	r.Header.Set("Authorization", scheme+" "+token)
	return r
}

func testAPITokens(t *testing.T, e *accountsEnv) {
	a := e.add(t, "carol@example.com", accounts.Editor, "a")
	token, tok, err := e.svc.CreateToken(e.ctx, e.op, a.ID, "zapier")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "fmd_") || len(token) != 4+43 {
		t.Fatalf("token %q: want fmd_ and 32 bytes base64url", token)
	}
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		p, err := e.svc.Authenticate(bearer(scheme, token))
		if err != nil {
			t.Fatalf("%s token: %v", scheme, err)
		}
		if p.AccountID != a.ID || p.Role != accounts.Editor || !slices.Equal(p.Sites, []string{"a"}) || p.Via != accounts.ViaToken || p.TokenID != tok.ID {
			t.Fatalf("token principal %+v", p)
		}
	}
	for _, h := range []string{"Basic " + token, "Bearer", "Bearer fmd_wrong", token} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		if _, err := e.svc.Authenticate(r); !errors.Is(err, accounts.ErrUnauthenticated) {
			t.Fatalf("Authorization %q: %v, want ErrUnauthenticated", h, err)
		}
	}
	// The token carries the account's scope as it is now.
	if _, err := e.svc.ChangeRole(e.ctx, e.op, a.ID, accounts.Viewer, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(bearer("Bearer", token)); err != nil || p.Role != accounts.Viewer || !slices.Equal(p.Sites, []string{"a", "b"}) {
		t.Fatalf("after role change: %+v %v", p, err)
	}
	// The list shows name and times, never the token; last use is
	// written at most once a minute.
	list := func() accounts.Token {
		t.Helper()
		ts, err := e.svc.Tokens(e.ctx, e.op, a.ID)
		if err != nil || len(ts) != 1 {
			t.Fatalf("tokens %+v %v", ts, err)
		}
		return ts[0]
	}
	first := list()
	if first.Name != "zapier" || first.AccountEmail != a.Email || !first.CreatedAt.Equal(tok.CreatedAt) || !first.LastUsedAt.Equal(e.clock.Now()) {
		t.Fatalf("listed %+v", first)
	}
	e.clock.Advance(30 * time.Second)
	if _, err := e.svc.Authenticate(bearer("Bearer", token)); err != nil {
		t.Fatal(err)
	}
	if got := list().LastUsedAt; !got.Equal(first.LastUsedAt) {
		t.Fatalf("last used moved to %v within the minute", got)
	}
	e.clock.Advance(31 * time.Second)
	if _, err := e.svc.Authenticate(bearer("Bearer", token)); err != nil {
		t.Fatal(err)
	}
	if got := list().LastUsedAt; !got.Equal(e.clock.Now()) {
		t.Fatalf("last used %v, want %v after a minute", got, e.clock.Now())
	}
	// A second token; the list is newest first.
	e.clock.Advance(time.Second)
	token2, tok2, err := e.svc.CreateToken(e.ctx, e.op, a.ID, "backup")
	if err != nil {
		t.Fatal(err)
	}
	if ts, _ := e.svc.Tokens(e.ctx, e.op, ""); len(ts) != 2 || ts[0].ID != tok2.ID {
		t.Fatalf("all tokens %+v, want 2, newest first", ts)
	}
	// Revoked: refused at once; revoking again says so.
	if err := e.svc.RevokeToken(e.ctx, e.op, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(bearer("Bearer", token)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("revoked token: %v, want ErrUnauthenticated", err)
	}
	if err := e.svc.RevokeToken(e.ctx, e.op, tok.ID); !errors.Is(err, accounts.ErrRevoked) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("second revoke: %v, want ErrRevoked", err)
	}
	if err := e.st.RevokeAPIToken(e.ctx, "tok_nothing", e.clock.Now(), accounts.Entry{}); !errors.Is(err, accounts.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("revoke unknown: %v, want ErrNotFound", err)
	}
	if got, err := e.st.APITokenByID(e.ctx, tok.ID); err != nil || !got.RevokedAt.Equal(e.clock.Now()) {
		t.Fatalf("revoked token reads %+v %v", got, err)
	}
	// A disabled account's tokens stop working.
	if _, err := e.svc.SetDisabled(e.ctx, e.op, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(bearer("Bearer", token2)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("token of a disabled account: %v, want ErrUnauthenticated", err)
	}
	if len(e.audit(t, "token.create")) != 2 || len(e.audit(t, "token.revoke")) != 1 {
		t.Fatal("token changes missing from the audit log")
	}
	for _, en := range e.audit(t, "token.create") {
		if strings.Contains(en.Detail+en.Target+en.Actor, token) || strings.Contains(en.Detail+en.Target+en.Actor, token2) {
			t.Fatalf("the audit log holds a token: %+v", en)
		}
	}
}

// The admin token made at first start (the legacy tokens table) is an
// owner of every site.
func testLegacyToken(t *testing.T, e *accountsEnv) {
	token, hash := accounts.NewToken()
	if _, err := e.st.PutToken(e.ctx, "admin", hash, false); err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(bearer("Bearer", token))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "admin token" || p.Role != accounts.Owner || !slices.Equal(p.Sites, []string{"*"}) || p.Via != accounts.ViaToken || p.AccountID != "" {
		t.Fatalf("admin token principal %+v", p)
	}
	if !p.Can(accounts.ManageAccounts, "any-site") || p.String() != "admin token" {
		t.Fatalf("admin token cannot manage accounts or describes itself as %q", p)
	}
}

func testSessionExpiry(t *testing.T, e *accountsEnv) {
	e.add(t, "dan@example.com", accounts.Viewer, "a")
	auth := func(w *httptest.ResponseRecorder) error {
		_, err := e.svc.Authenticate(request("GET", "/admin/", w))
		return err
	}
	// Idle: each use moves the end 12 hours on; 12 hours without use end it.
	w, _ := e.signIn(t, "dan@example.com")
	for range 3 {
		e.clock.Advance(11 * time.Hour)
		if err := auth(w); err != nil {
			t.Fatalf("used every 11h: %v", err)
		}
	}
	e.clock.Advance(12*time.Hour - time.Second)
	if err := auth(w); err != nil {
		t.Fatalf("a second before the idle limit: %v", err)
	}
	e.clock.Advance(12 * time.Hour)
	if err := auth(w); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("idle 12h: %v, want ErrUnauthenticated", err)
	}
	// Absolute: 7 days after sign-in, however often it is used.
	w, _ = e.signIn(t, "dan@example.com")
	start := e.clock.Now()
	for e.clock.Now().Add(11 * time.Hour).Before(start.Add(7 * 24 * time.Hour)) {
		e.clock.Advance(11 * time.Hour)
		if err := auth(w); err != nil {
			t.Fatalf("at %v after sign-in: %v", e.clock.Now().Sub(start), err)
		}
	}
	e.clock.Advance(start.Add(7 * 24 * time.Hour).Sub(e.clock.Now()))
	if err := auth(w); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("7 days after sign-in: %v, want ErrUnauthenticated", err)
	}
	// Expired rows go at the next prune; live ones stay.
	live, _ := e.signIn(t, "dan@example.com")
	if n, err := e.svc.Prune(e.ctx); err != nil || n < 2 {
		t.Fatalf("prune: %d %v, want the two expired sessions (at least) gone", n, err)
	}
	if err := auth(live); err != nil {
		t.Fatalf("a live session after prune: %v", err)
	}
	// Sign-out deletes the row: the old cookie no longer works.
	out := httptest.NewRecorder()
	if err := e.svc.ClearSession(out, request("POST", "/admin/logout", live)); err != nil {
		t.Fatal(err)
	}
	if c := out.Result().Cookies(); len(c) != 1 || c[0].Name != accounts.CookieName || c[0].MaxAge >= 0 {
		t.Fatalf("sign-out cookies %+v, want %s deleted", c, accounts.CookieName)
	}
	if err := auth(live); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("after sign-out: %v, want ErrUnauthenticated", err)
	}
	if len(e.audit(t, "logout")) != 1 {
		t.Fatal("sign-out missing from the audit log")
	}
}

func testSessionCookie(t *testing.T, e *accountsEnv) {
	e.add(t, "erin@example.com", accounts.Owner, "a")
	a, err := e.svc.Login(e.ctx, "erin@example.com", password, "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		tls        bool
		secureFlag bool
		wantSecure bool
	}{
		{"plain HTTP", false, false, false},
		{"TLS", true, false, true},
		{"TLS at a proxy", false, true, true},
	} {
		svc := accounts.New(e.st, accounts.Config{Now: e.clock.Now, Password: fastParams, SecureCookies: tc.secureFlag})
		r := httptest.NewRequest("POST", "/admin/login", nil)
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		w := httptest.NewRecorder()
		if _, err := svc.IssueSession(w, r, a); err != nil {
			t.Fatal(err)
		}
		cs := w.Result().Cookies()
		// The session's, and the device cookie that spares this browser
		// the account's slowdown at its next sign-ins.
		if len(cs) != 2 || cs[1].Name != accounts.DeviceCookie || !cs[1].HttpOnly || cs[1].Secure != tc.wantSecure {
			t.Fatalf("%s: cookies %+v", tc.name, cs)
		}
		c := cs[0]
		if c.Name != "formd_session" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != tc.wantSecure || len(c.Value) != 43 {
			t.Fatalf("%s: cookie %+v", tc.name, c)
		}
		if _, _, err := e.st.SessionByHash(e.ctx, []byte(c.Value)); !errors.Is(err, accounts.ErrNotFound) {
			t.Fatalf("%s: the session is stored under its cookie value, not its hash", tc.name)
		}
	}
	// A cookie sent before sign-in is ended, not kept.
	w1, _ := e.signIn(t, "erin@example.com")
	w2 := httptest.NewRecorder()
	if _, err := e.svc.IssueSession(w2, request("POST", "/admin/login", w1), a); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(request("GET", "/", w1)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("the session replaced at sign-in still works: %v", err)
	}
	p, err := e.svc.Authenticate(request("GET", "/", w2))
	if err != nil || p.Via != accounts.ViaSession || p.CSRFToken == "" || p.AccountID != a.ID {
		t.Fatalf("session principal %+v %v", p, err)
	}
	// CSRF: a state-changing request of a signed-in browser needs the
	// session's token, as a form field or a header.
	post := func(body url.Values, header string) *http.Request {
		r := httptest.NewRequest("POST", "/admin/forms/f/close", strings.NewReader(body.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range w2.Result().Cookies() {
			r.AddCookie(c)
		}
		if header != "" {
			r.Header.Set("X-CSRF-Token", header)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		p    accounts.Principal
		want error
	}{
		{"no token", post(nil, ""), p, accounts.ErrCSRF},
		{"wrong header", post(nil, "nope"), p, accounts.ErrCSRF},
		{"wrong field", post(url.Values{"_csrf": {"nope"}}, ""), p, accounts.ErrCSRF},
		{"header", post(nil, p.CSRFToken), p, nil},
		{"form field", post(url.Values{"_csrf": {p.CSRFToken}}, ""), p, nil},
		{"GET needs none", request("GET", "/admin/", w2), p, nil},
		{"bearer token needs none", post(nil, ""), accounts.Principal{Via: accounts.ViaToken, Role: accounts.Owner}, nil},
	} {
		if err := e.svc.CheckCSRF(tc.r, tc.p); !errors.Is(err, tc.want) {
			t.Errorf("CSRF %s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// An Authorization header is judged alone, even with a good cookie.
	r := request("GET", "/", w2)
	r.Header.Set("Authorization", "Bearer fmd_wrong")
	if _, err := e.svc.Authenticate(r); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("bad bearer with a good cookie: %v, want ErrUnauthenticated", err)
	}
}

func testLoginLimit(t *testing.T, e *accountsEnv) {
	e.add(t, "fay@example.com", accounts.Viewer, "a")
	const ip = "198.51.100.7"
	// An unknown e-mail and a wrong password get the same answer.
	_, errUnknown := e.svc.Login(e.ctx, "nobody@example.com", password, "203.0.113.1")
	_, errWrong := e.svc.Login(e.ctx, "fay@example.com", "wrong password", "203.0.113.1")
	if !errors.Is(errUnknown, accounts.ErrBadCredentials) || errUnknown.Error() != errWrong.Error() {
		t.Fatalf("unknown e-mail %q, wrong password %q: want the same ErrBadCredentials", errUnknown, errWrong)
	}
	// Five failures of one pair in a row at any pace; then each attempt
	// waits twice as long after the one before: 1s, 2s, 4s…
	for i := range 5 {
		if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	var locked *accounts.LockedError
	_, err := e.svc.Login(e.ctx, "fay@example.com", password, ip)
	if !errors.As(err, &locked) || !errors.Is(err, accounts.ErrLocked) || locked.RetryAfter(e.clock.Now()) != time.Second {
		t.Fatalf("6th attempt at once: %v, want locked for 1s", err)
	}
	// The refused attempt counts too: the next waits 2s after it.
	e.clock.Advance(time.Second)
	_, err = e.svc.Login(e.ctx, "fay@example.com", password, ip)
	if !errors.As(err, &locked) || locked.RetryAfter(e.clock.Now()) != time.Second {
		t.Fatalf("7th attempt 1s later: %v, want locked for 1s more", err)
	}
	e.clock.Advance(4 * time.Second)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
		t.Fatalf("8th attempt after its wait: %v, want it checked", err)
	}
	e.clock.Advance(8 * time.Second)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", password, ip); err != nil {
		t.Fatalf("9th attempt after its wait, right password: %v", err)
	}
	// A success starts the pair over.
	for range 5 {
		if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
			t.Fatalf("after a success: %v", err)
		}
	}
	// A pause of the window starts it over too.
	e.clock.Advance(15 * time.Minute)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", password, ip); err != nil {
		t.Fatalf("after a pause: %v", err)
	}
	// Per address: a budget a success does not refill. Rounds of failures
	// on other e-mails, each followed by signing in to one's own account,
	// run it out, and then the own account waits too.
	svc := accounts.New(e.st, accounts.Config{Now: e.clock.Now, Password: fastParams, AddressAttempts: 20})
	const attacker = "192.0.2.66"
	e.add(t, "mallory@example.com", accounts.Viewer, "a")
	for round := range 2 {
		for i := range 9 {
			if _, err := svc.Login(e.ctx, fmt.Sprintf("guess%d@example.com", i), "wrong password", attacker); !errors.Is(err, accounts.ErrBadCredentials) {
				t.Fatalf("round %d failure %d: %v", round, i+1, err)
			}
		}
		if _, err := svc.Login(e.ctx, "mallory@example.com", password, attacker); err != nil {
			t.Fatalf("round %d: own sign-in: %v", round, err)
		}
	}
	if _, err := svc.Login(e.ctx, "guess0@example.com", "wrong password", attacker); !errors.Is(err, accounts.ErrLocked) {
		t.Fatalf("21st attempt from one address: %v, want ErrLocked", err)
	}
	if _, err := svc.Login(e.ctx, "mallory@example.com", password, attacker); !errors.Is(err, accounts.ErrLocked) {
		t.Fatalf("the address's own account past the budget: %v, want ErrLocked", err)
	}
	if _, err := svc.Login(e.ctx, "fay@example.com", password, "203.0.113.99"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// Failures are in the audit log, the password never.
	fails := e.audit(t, "login.failure")
	if len(fails) != 2+6+5+18 {
		t.Fatalf("%d login.failure entries, want %d", len(fails), 2+6+5+18)
	}
	for _, en := range append(fails, e.audit(t, "login")...) {
		if strings.Contains(en.Actor+en.Target+en.Detail, "wrong password") || strings.Contains(en.Actor+en.Target+en.Detail, password) {
			t.Fatalf("an audit entry holds a password: %+v", en)
		}
	}
	if n := len(e.audit(t, "login.locked")); n == 0 || n > 4 {
		t.Fatalf("%d login.locked entries, want a few", n)
	}
}

// testLoginStorm: a storm of wrong passwords for the owner from one
// address neither keeps the owner, signing in from another, out nor gets
// the attacker more than a handful of checked guesses.
func testLoginStorm(t *testing.T, e *accountsEnv) {
	e.add(t, "owner@example.com", accounts.Owner, "*")
	const attacker, owner = "192.0.2.13", "198.51.100.20"
	checked := 0
	for i := range 200 {
		_, err := e.svc.Login(e.ctx, "owner@example.com", fmt.Sprint("guess ", i), attacker)
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			checked++
		case !errors.Is(err, accounts.ErrLocked):
			t.Fatalf("guess %d: %v", i, err)
		}
		e.clock.Advance(100 * time.Millisecond)
		if i%50 == 49 {
			if _, err := e.svc.Login(e.ctx, "owner@example.com", password, owner); err != nil {
				t.Fatalf("the owner from another address during the storm (after %d guesses): %v", i+1, err)
			}
		}
	}
	// 20 s of guesses 100 ms apart: 5 free, then the waits of 1s, 2s, 4s
	// and 8s let at most a few more through.
	if checked > 9 {
		t.Fatalf("%d of 200 guesses were checked, want at most 9", checked)
	}
	var locked *accounts.LockedError
	_, err := e.svc.Login(e.ctx, "owner@example.com", password, attacker)
	if !errors.As(err, &locked) || locked.RetryAfter(e.clock.Now()) < time.Minute {
		t.Fatalf("the attacker's pair after the storm: %v, want a long wait", err)
	}
}

// testLoginManyAddresses is issue 30's guessing: 200 guesses at one
// account from 40 addresses in 12 s were all checked, each address's
// pair staying under its own limit. The account's own count slows the
// browsers that never signed in to it once AccountAttempts (20) guesses
// were checked, so few more are; the owner's browser, which signed in
// before (its device cookie), signs in at once throughout — the lock-out
// case of testLoginStorm still holds. An owner on a browser new to the
// account waits with the guessers: the trade-off the README states.
func testLoginManyAddresses(t *testing.T, e *accountsEnv) {
	e.add(t, "owner@example.com", accounts.Owner, "*")
	// The owner signed in from their browser before the storm.
	w, _ := e.signIn(t, "owner@example.com")
	var device string
	for _, c := range w.Result().Cookies() {
		if c.Name == accounts.DeviceCookie {
			device = c.Value
		}
	}
	if device == "" {
		t.Fatal("a sign-in set no device cookie")
	}
	checked := 0
	for i := range 200 {
		ip := fmt.Sprintf("203.0.113.%d", i%40+1)
		_, err := e.svc.Login(e.ctx, "owner@example.com", fmt.Sprint("guess ", i), ip)
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			checked++
		case !errors.Is(err, accounts.ErrLocked):
			t.Fatalf("guess %d: %v", i, err)
		}
		e.clock.Advance(60 * time.Millisecond)
		if i%20 == 19 {
			if _, err := e.svc.LoginDevice(e.ctx, "owner@example.com", password, "198.51.100.20", device); err != nil {
				t.Fatalf("the owner's browser during the storm (after %d guesses): %v", i+1, err)
			}
		}
	}
	// 20 checked, then the waits of 1s, 2s, 4s… of 12 s let a few more.
	if checked > 25 {
		t.Fatalf("%d of 200 guesses from 40 addresses were checked, want at most 25", checked)
	}
	// Another account's device cookie, or a forged one, is no pass.
	for _, d := range []string{"", "forged.cookie", device + "x"} {
		if _, err := e.svc.LoginDevice(e.ctx, "owner@example.com", password, "198.51.100.21", d); !errors.Is(err, accounts.ErrLocked) {
			t.Fatalf("a browser new to the account (device %q) during the storm: %v, want the account's wait", d, err)
		}
	}
}

// Attempts at once are all counted: no more than the limit are checked.
func testLoginConcurrent(t *testing.T, e *accountsEnv) {
	e.add(t, "gus@example.com", accounts.Viewer, "a")
	const n = 25
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.svc.Login(e.ctx, "gus@example.com", "wrong password", "203.0.113.8")
		})
	}
	wg.Wait()
	bad, locked := 0, 0
	for _, err := range errs {
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			bad++
		case errors.Is(err, accounts.ErrLocked):
			locked++
		default:
			t.Fatalf("concurrent sign-in: %v", err)
		}
	}
	if bad != 5 || locked != n-5 {
		t.Fatalf("%d checked, %d locked; want exactly 5 checked", bad, locked)
	}
}

// A hash made with other parameters is replaced at sign-in.
func testRehash(t *testing.T, e *accountsEnv) {
	a := e.add(t, "hal@example.com", accounts.Viewer, "a")
	newer := accounts.Params{Memory: 128, Time: 2, Threads: 1}
	svc := accounts.New(e.st, accounts.Config{Now: e.clock.Now, Password: newer})
	if _, err := svc.Login(e.ctx, "hal@example.com", password, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	got, err := e.st.AccountByID(e.ctx, a.ID)
	if err != nil || accounts.NeedsRehash(got.PasswordHash, newer) {
		t.Fatalf("hash after sign-in %q %v: want m=128,t=2", got.PasswordHash, err)
	}
	if _, err := svc.Login(e.ctx, "hal@example.com", password, "192.0.2.1"); err != nil {
		t.Fatalf("sign-in with the new hash: %v", err)
	}
}

func testSetupCode(t *testing.T, e *accountsEnv) {
	first, state, err := e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued || len(first) < 32 {
		t.Fatalf("setup code %q %v %v", first, state, err)
	}
	// Another instance, or a restart, while it is live: nothing new, and
	// the first link still works.
	if code, state, err := e.svc.SetupCode(e.ctx, false); code != "" || state != accounts.SetupPending || err != nil {
		t.Fatalf("second start: %q %v %v, want SetupPending", code, state, err)
	}
	// formd setup-link replaces it.
	code, state, err := e.svc.SetupCode(e.ctx, true)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	if _, err := e.svc.Setup(e.ctx, first, "ida@example.com", password, ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("replaced code: %v, want ErrSetupCode", err)
	}
	if _, err := e.svc.Setup(e.ctx, "not the code", "ida@example.com", "short", ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("a wrong code is refused before the password is looked at: %v", err)
	}
	if _, err := e.svc.Setup(e.ctx, code, "ida@example.com", "short", ""); !errors.Is(err, accounts.ErrPasswordTooShort) {
		t.Fatalf("short password: %v", err)
	}
	// Used at once by many: one account, the rest refused.
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.svc.Setup(e.ctx, code, fmt.Sprintf("owner%d@example.com", i), password, "")
		})
	}
	wg.Wait()
	ok2 := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok2++
		case !(errors.Is(err, accounts.ErrSetupCode) || errors.Is(err, accounts.ErrSetupDone)) || errors.Is(err, store.ErrUnavailable):
			t.Fatalf("concurrent setup: %v, want ErrSetupCode or ErrSetupDone", err)
		}
	}
	all, err := e.st.ListAccounts(e.ctx)
	if ok2 != 1 || err != nil || len(all) != 1 || all[0].Role != accounts.Owner || !slices.Equal(all[0].Sites, []string{"*"}) {
		t.Fatalf("%d setups succeeded, accounts %+v %v: want one owner of every site", ok2, all, err)
	}
	if _, err := e.svc.Login(e.ctx, all[0].Email, password, "192.0.2.1"); err != nil {
		t.Fatalf("sign in as the first owner: %v", err)
	}
	// With an account, no new code is made.
	if code, state, err := e.svc.SetupCode(e.ctx, true); state != accounts.SetupNotNeeded || code != "" || err != nil {
		t.Fatalf("setup code with an account: %q %v %v", code, state, err)
	}
}

func testSetupDone(t *testing.T, e *accountsEnv) {
	code, state, err := e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	e.clock.Advance(24*time.Hour + time.Second)
	if _, err := e.svc.Setup(e.ctx, code, "jo@example.com", password, ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("expired code: %v, want ErrSetupCode", err)
	}
	// An expired code is replaced at the next start.
	code, state, err = e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	// formd users add made an account meanwhile.
	e.add(t, "kim@example.com", accounts.Owner, "*")
	if _, err := e.svc.Setup(e.ctx, code, "jo@example.com", password, ""); !errors.Is(err, accounts.ErrSetupDone) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("setup with an account: %v, want ErrSetupDone", err)
	}
	if _, err := e.st.AccountByEmail(e.ctx, "jo@example.com"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("the refused setup made an account: %v", err)
	}
}

func testAuditPaging(t *testing.T, e *accountsEnv) {
	var want []accounts.Entry
	for i := range 25 {
		en := accounts.Entry{Actor: "tester", Action: "entry.cancel", Site: []string{"a", "b", "c"}[i%3], Form: fmt.Sprint("f", i%2), Target: fmt.Sprint("e", i)}
		if err := e.svc.Record(e.ctx, en); err != nil {
			t.Fatal(err)
		}
		want = append(want, en)
		e.clock.Advance(time.Second)
	}
	slices.Reverse(want)
	page := func(by accounts.Principal, f accounts.AuditFilter) []string {
		t.Helper()
		var got []string
		for {
			es, err := e.svc.Audit(e.ctx, by, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) > f.Limit {
				t.Fatalf("page of %d, limit %d", len(es), f.Limit)
			}
			for i, en := range es {
				if i > 0 && (en.ID >= es[i-1].ID || en.At.After(es[i-1].At)) {
					t.Fatalf("not newest first: %+v after %+v", en, es[i-1])
				}
				got = append(got, en.Target)
			}
			if len(es) < f.Limit {
				return got
			}
			f.Before = es[len(es)-1].ID
		}
	}
	targets := func(keep func(accounts.Entry) bool) []string {
		var out []string
		for _, en := range want {
			if keep(en) {
				out = append(out, en.Target)
			}
		}
		return out
	}
	all := targets(func(accounts.Entry) bool { return true })
	if got := page(e.op, accounts.AuditFilter{Limit: 10}); !slices.Equal(got, all) {
		t.Fatalf("all pages %v, want %v", got, all)
	}
	if got := page(e.op, accounts.AuditFilter{Limit: 4, Sites: []string{"b"}}); !slices.Equal(got, targets(func(en accounts.Entry) bool { return en.Site == "b" })) {
		t.Fatalf("site b: %v", got)
	}
	if got := page(e.op, accounts.AuditFilter{Limit: 3, Sites: []string{"a"}, Form: "f1"}); !slices.Equal(got, targets(func(en accounts.Entry) bool { return en.Site == "a" && en.Form == "f1" })) {
		t.Fatalf("site a, form f1: %v", got)
	}
	// A viewer of sites a and c sees theirs only, and is refused b.
	viewer := accounts.Principal{AccountID: "x", Email: "v@example.com", Role: accounts.Viewer, Sites: []string{"a", "c"}, Via: accounts.ViaSession}
	if got := page(viewer, accounts.AuditFilter{Limit: 7}); !slices.Equal(got, targets(func(en accounts.Entry) bool { return en.Site != "b" })) {
		t.Fatalf("viewer of a, c: %v", got)
	}
	if _, err := e.svc.Audit(e.ctx, viewer, accounts.AuditFilter{Sites: []string{"b"}}); !errors.Is(err, accounts.ErrForbidden) {
		t.Fatalf("viewer asking for site b: %v, want ErrForbidden", err)
	}
	es, err := e.svc.Audit(e.ctx, e.op, accounts.AuditFilter{Limit: 1})
	if err != nil || len(es) != 1 || !es[0].At.Equal(e.clock.Now().Add(-time.Second)) || es[0].Actor != "tester" || es[0].Form != "f0" || es[0].Site != "a" {
		t.Fatalf("newest entry %+v %v", es, err)
	}
}

// An account of site A cannot see or change what is site B's.
func testScope(t *testing.T, e *accountsEnv) {
	e.add(t, "owner-a@example.com", accounts.Owner, "a")
	editorA := e.add(t, "editor-a@example.com", accounts.Editor, "a")
	viewerB := e.add(t, "viewer-b@example.com", accounts.Viewer, "b")
	_, tokB, err := e.svc.CreateToken(e.ctx, e.op, viewerB.ID, "b's token")
	if err != nil {
		t.Fatal(err)
	}
	_, pA := e.signIn(t, "owner-a@example.com")
	_, pEd := e.signIn(t, "editor-a@example.com")

	cases := []struct {
		name string
		do   func() error
		want error
	}{
		{"owner A adds an editor of A", func() error {
			_, err := e.svc.AddAccount(e.ctx, pA, accounts.NewAccount{Email: "new-a@example.com", Role: accounts.Editor, Sites: []string{"a"}, Password: password})
			return err
		}, nil},
		{"owner A adds an account of B", func() error {
			_, err := e.svc.AddAccount(e.ctx, pA, accounts.NewAccount{Email: "new-b@example.com", Role: accounts.Viewer, Sites: []string{"b"}, Password: password})
			return err
		}, accounts.ErrForbidden},
		{"owner A adds an account of every site", func() error {
			_, err := e.svc.AddAccount(e.ctx, pA, accounts.NewAccount{Email: "new-all@example.com", Role: accounts.Viewer, Sites: []string{"*"}, Password: password})
			return err
		}, accounts.ErrForbidden},
		{"owner A moves A's editor to B", func() error {
			_, err := e.svc.ChangeRole(e.ctx, pA, editorA.ID, accounts.Editor, []string{"a", "b"})
			return err
		}, accounts.ErrForbidden},
		{"owner A changes B's viewer", func() error {
			_, err := e.svc.ChangeRole(e.ctx, pA, viewerB.ID, accounts.Viewer, []string{"a"})
			return err
		}, accounts.ErrNotFound},
		{"owner A disables B's viewer", func() error { _, err := e.svc.SetDisabled(e.ctx, pA, viewerB.ID, true); return err }, accounts.ErrNotFound},
		{"owner A reads B's viewer", func() error { _, err := e.svc.Account(e.ctx, pA, viewerB.ID); return err }, accounts.ErrNotFound},
		{"owner A revokes B's token", func() error { return e.svc.RevokeToken(e.ctx, pA, tokB.ID) }, accounts.ErrNotFound},
		{"owner A makes a token for B's viewer", func() error {
			_, _, err := e.svc.CreateToken(e.ctx, pA, viewerB.ID, "x")
			return err
		}, accounts.ErrForbidden},
		{"editor A adds an account of A", func() error {
			_, err := e.svc.AddAccount(e.ctx, pEd, accounts.NewAccount{Email: "new-a2@example.com", Role: accounts.Viewer, Sites: []string{"a"}, Password: password})
			return err
		}, accounts.ErrForbidden},
		{"editor A lists accounts", func() error { _, err := e.svc.Accounts(e.ctx, pEd); return err }, accounts.ErrForbidden},
		{"editor A makes a token for itself", func() error { _, _, err := e.svc.CreateToken(e.ctx, pEd, editorA.ID, "mine"); return err }, nil},
		{"editor A promotes itself", func() error {
			_, err := e.svc.ChangeRole(e.ctx, pEd, editorA.ID, accounts.Owner, []string{"a"})
			return err
		}, accounts.ErrForbidden},
	}
	for _, tc := range cases {
		if err := tc.do(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	list, err := e.svc.Accounts(e.ctx, pA)
	if err != nil {
		t.Fatal(err)
	}
	var emails []string
	for _, a := range list {
		emails = append(emails, a.Email)
	}
	if want := []string{"editor-a@example.com", "new-a@example.com", "owner-a@example.com"}; !slices.Equal(emails, want) {
		t.Fatalf("owner A lists %v, want %v", emails, want)
	}
	ts, err := e.svc.Tokens(e.ctx, pA, "")
	if err != nil || len(ts) != 1 || ts[0].AccountID != editorA.ID {
		t.Fatalf("owner A sees tokens %+v %v, want only A's editor's", ts, err)
	}
}

// The admin token belongs to the first owner of every site: listed and
// revocable like the account's own tokens, refused while the account is
// disabled, and not issued again by a restart once revoked.
func testAdminTokenOwned(t *testing.T, e *accountsEnv) {
	token, hash := accounts.NewToken()
	if ok, err := e.st.PutToken(e.ctx, "admin", hash, true); !ok || err != nil {
		t.Fatal(ok, err)
	}
	e.add(t, "viv@example.com", accounts.Owner, "a") // not of every site: not the token's
	first := e.add(t, "una@example.com", accounts.Owner, "*")
	e.add(t, "wes@example.com", accounts.Owner, "*")
	p, err := e.svc.Authenticate(bearer("Bearer", token))
	if err != nil || p.AccountID != first.ID || p.TokenID != accounts.AdminTokenID || p.String() != "una@example.com (token admin)" {
		t.Fatalf("admin token principal %+v %v, want una's", p, err)
	}
	list, err := e.svc.Tokens(e.ctx, p, "")
	if err != nil || len(list) != 1 || list[0].ID != accounts.AdminTokenID || list[0].AccountEmail != "una@example.com" || list[0].LastUsedAt.IsZero() {
		t.Fatalf("tokens %+v %v, want the admin token, used, of una", list, err)
	}
	if _, err := e.svc.SetDisabled(e.ctx, e.op, first.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(bearer("Bearer", token)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("admin token of a disabled account: %v, want ErrUnauthenticated", err)
	}
	if _, err := e.svc.SetDisabled(e.ctx, e.op, first.ID, false); err != nil {
		t.Fatal(err)
	}
	_, viv := e.signIn(t, "viv@example.com")
	if err := e.svc.RevokeToken(e.ctx, viv, accounts.AdminTokenID); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("an owner of one site revokes the admin token: %v, want ErrNotFound", err)
	}
	if err := e.svc.RevokeToken(e.ctx, p, accounts.AdminTokenID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeToken(e.ctx, p, accounts.AdminTokenID); !errors.Is(err, accounts.ErrRevoked) {
		t.Fatalf("revoke twice: %v, want ErrRevoked", err)
	}
	if _, err := e.svc.Authenticate(bearer("Bearer", token)); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("revoked admin token: %v, want ErrUnauthenticated", err)
	}
	_, again := accounts.NewToken()
	if ok, err := e.st.PutToken(e.ctx, "admin", again, true); ok || err != nil {
		t.Fatalf("a restart after the revocation issued a token: %v %v", ok, err)
	}
	if len(e.audit(t, "token.revoke")) != 1 {
		t.Fatal("the revocation is not in the audit log")
	}
	// formd token makes a new one, still the first owner's.
	token, hash = accounts.NewToken()
	if ok, err := e.st.PutToken(e.ctx, "admin", hash, false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if p, err := e.svc.Authenticate(bearer("Bearer", token)); err != nil || p.AccountID != first.ID {
		t.Fatalf("the token formd token made: %+v %v, want una's", p, err)
	}
}

// An admin token made while an owner of every site exists is theirs at
// once.
func testAdminTokenMadeLate(t *testing.T, e *accountsEnv) {
	first := e.add(t, "ray@example.com", accounts.Owner, "*")
	token, hash := accounts.NewToken()
	if ok, err := e.st.PutToken(e.ctx, "admin", hash, false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if p, err := e.svc.Authenticate(bearer("Bearer", token)); err != nil || p.AccountID != first.ID {
		t.Fatalf("the admin token made after the first owner: %+v %v, want ray's", p, err)
	}
}

// A token an owner makes for another account names its maker in every
// use's audit line.
func testTokenMaker(t *testing.T, e *accountsEnv) {
	e.add(t, "xan@example.com", accounts.Owner, "*")
	bob := e.add(t, "bob@example.com", accounts.Editor, "a")
	_, owner := e.signIn(t, "xan@example.com")
	token, _, err := e.svc.CreateToken(e.ctx, owner, bob.ID, "zapier")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(bearer("Bearer", token))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); !strings.HasPrefix(got, "bob@example.com (token tok_") || !strings.HasSuffix(got, " made by xan@example.com)") {
		t.Fatalf("principal of a token made for another: %q, want bob's naming xan", got)
	}
	own, _, err := e.svc.CreateToken(e.ctx, owner, owner.AccountID, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.svc.Authenticate(bearer("Bearer", own)); err != nil || strings.Contains(p.String(), "made by") {
		t.Fatalf("own token: %q %v", p.String(), err)
	}
	if _, _, err := e.svc.CreateToken(e.ctx, owner, bob.ID, strings.Repeat("n", accounts.MaxTokenName+1)); !errors.Is(err, accounts.ErrInvalidTokenName) {
		t.Fatalf("a name over %d bytes: %v, want ErrInvalidTokenName", accounts.MaxTokenName, err)
	}
}

// The setup page's posts are budgeted per address, and a wrong code never
// reaches the password check.
func testSetupBudget(t *testing.T, e *accountsEnv) {
	if _, _, err := e.svc.SetupCode(e.ctx, false); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.5"); !errors.Is(err, accounts.ErrSetupCode) {
			t.Fatalf("bogus post %d: %v", i+1, err)
		}
	}
	var locked *accounts.LockedError
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.5"); !errors.As(err, &locked) {
		t.Fatalf("11th post from one address: %v, want locked", err)
	}
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.6"); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("another address: %v", err)
	}
	e.add(t, "zed@example.com", accounts.Owner, "*")
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.6"); !errors.Is(err, accounts.ErrSetupDone) {
		t.Fatalf("once set up: %v, want ErrSetupDone", err)
	}
}

// sessionOf authenticates the session a sign-in response set.
func (e *accountsEnv) sessionOf(w *httptest.ResponseRecorder) error {
	_, err := e.svc.Authenticate(request("GET", "/admin/forms", w))
	return err
}

func testPasswordChange(t *testing.T, e *accountsEnv) {
	e.add(t, "amy@example.com", accounts.Editor, "a")
	here, p := e.signIn(t, "amy@example.com")
	there, _ := e.signIn(t, "amy@example.com")
	const next = "a new and longer secret"
	if err := e.svc.ChangePassword(e.ctx, p, "not my password", next, "192.0.2.1"); !errors.Is(err, accounts.ErrWrongPassword) {
		t.Fatalf("wrong current password: %v, want ErrWrongPassword", err)
	}
	if err := e.svc.ChangePassword(e.ctx, p, password, "short", "192.0.2.1"); !errors.Is(err, accounts.ErrPasswordTooShort) {
		t.Fatalf("short new password: %v", err)
	}
	if err := e.svc.ChangePassword(e.ctx, p, password, next, "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if err := e.sessionOf(here); err != nil {
		t.Fatalf("the session that changed it: %v, want it kept", err)
	}
	if err := e.sessionOf(there); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("another session: %v, want it ended", err)
	}
	if _, err := e.svc.Login(e.ctx, "amy@example.com", password, "192.0.2.2"); !errors.Is(err, accounts.ErrBadCredentials) {
		t.Fatalf("the old password: %v", err)
	}
	if _, err := e.svc.Login(e.ctx, "amy@example.com", next, "192.0.2.2"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	// The operator (formd users passwd) sets one and every session ends.
	if err := e.svc.SetPassword(e.ctx, e.op, p.AccountID, password); err != nil {
		t.Fatal(err)
	}
	if err := e.sessionOf(here); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("after formd users passwd: %v, want every session ended", err)
	}
}

func testPasswordReset(t *testing.T, e *accountsEnv) {
	e.add(t, "ola@example.com", accounts.Owner, "*")
	e.add(t, "pia@example.com", accounts.Owner, "b")
	bea := e.add(t, "bea@example.com", accounts.Viewer, "a")
	beaSession, _ := e.signIn(t, "bea@example.com")
	_, owner := e.signIn(t, "ola@example.com")
	_, other := e.signIn(t, "pia@example.com")
	if _, _, err := e.svc.ResetLink(e.ctx, other, bea.ID); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("an owner of another site: %v, want ErrNotFound", err)
	}
	old, _, err := e.svc.ResetLink(e.ctx, owner, bea.ID)
	if err != nil {
		t.Fatal(err)
	}
	code, expires, err := e.svc.ResetLink(e.ctx, owner, bea.ID)
	if err != nil || !expires.Equal(e.clock.Now().Add(4*time.Hour)) {
		t.Fatalf("reset link: %v, expires %v", err, expires)
	}
	if a, err := e.svc.ResetAccount(e.ctx, code); err != nil || a.Email != "bea@example.com" || a.PasswordHash != "" {
		t.Fatalf("reset account %+v %v", a, err)
	}
	if _, err := e.svc.ResetPassword(e.ctx, "bogus", "a brand new secret", "192.0.2.9"); !errors.Is(err, accounts.ErrResetInvalid) {
		t.Fatalf("bogus code: %v, want ErrResetInvalid", err)
	}
	if _, err := e.svc.ResetPassword(e.ctx, code, "a brand new secret", "192.0.2.9"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]string{"used": code, "the other link": old} {
		if _, err := e.svc.ResetPassword(e.ctx, c, "yet another secret", "192.0.2.9"); !errors.Is(err, accounts.ErrResetInvalid) {
			t.Fatalf("%s: %v, want ErrResetInvalid", name, err)
		}
	}
	if err := e.sessionOf(beaSession); !errors.Is(err, accounts.ErrUnauthenticated) {
		t.Fatalf("bea's session after the reset: %v, want ended", err)
	}
	if _, err := e.svc.Login(e.ctx, "bea@example.com", "a brand new secret", "192.0.2.3"); err != nil {
		t.Fatalf("the reset password: %v", err)
	}
	late, _, err := e.svc.ResetLink(e.ctx, owner, bea.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(4*time.Hour + time.Second)
	if _, err := e.svc.ResetPassword(e.ctx, late, "yet another secret", "192.0.2.9"); !errors.Is(err, accounts.ErrResetInvalid) {
		t.Fatalf("expired link: %v, want ErrResetInvalid", err)
	}
	if len(e.audit(t, "account.reset-link")) != 3 {
		t.Fatal("reset links are not in the audit log")
	}
}

func testSignOutEverywhere(t *testing.T, e *accountsEnv) {
	e.add(t, "cal@example.com", accounts.Viewer, "a")
	one, p := e.signIn(t, "cal@example.com")
	two, _ := e.signIn(t, "cal@example.com")
	e.add(t, "dee@example.com", accounts.Viewer, "a")
	dee, _ := e.signIn(t, "dee@example.com")
	if n, err := e.svc.SignOutEverywhere(e.ctx, p); n != 2 || err != nil {
		t.Fatalf("sign out everywhere: %d %v, want 2", n, err)
	}
	for _, w := range []*httptest.ResponseRecorder{one, two} {
		if err := e.sessionOf(w); !errors.Is(err, accounts.ErrUnauthenticated) {
			t.Fatalf("a session after signing out everywhere: %v", err)
		}
	}
	if err := e.sessionOf(dee); err != nil {
		t.Fatalf("another account's session: %v", err)
	}
}
