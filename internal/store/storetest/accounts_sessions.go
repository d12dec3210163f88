package storetest

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
)

// Accounts: sessions, their cookie, expiry and sign-out.

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

// sessionOf authenticates the session a sign-in response set.
func (e *accountsEnv) sessionOf(w *httptest.ResponseRecorder) error {
	_, err := e.svc.Authenticate(request("GET", "/admin/forms", w))
	return err
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
