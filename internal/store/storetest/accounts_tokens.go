package storetest

import (
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store"
)

// Accounts: API tokens, their scope and who may make them.

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
