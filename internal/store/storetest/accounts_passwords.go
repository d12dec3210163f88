package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
)

// Accounts: passwords changed, reset and rehashed.

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
