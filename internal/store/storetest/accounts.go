package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

type accountsEnv struct {
	st    AccountsStore
	clock *Clock
	svc   *accounts.Service
	ctx   context.Context
	op    accounts.Principal
}

func newAccountsEnv(t *testing.T, st AccountsStore) *accountsEnv {
	clock := NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
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
