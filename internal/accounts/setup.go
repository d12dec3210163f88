package accounts

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"strings"
)

// SetupState is what SetupCode did.
type SetupState int

// The outcomes of SetupCode.
const (
	// SetupIssued: a new code was made; print its link.
	SetupIssued SetupState = iota + 1
	// SetupPending: a code made earlier (by this instance or another) is
	// still live; only its maker printed it.
	SetupPending
	// SetupNotNeeded: an account exists.
	SetupNotNeeded
)

// SetupCode makes the one-time setup code while no account exists, valid
// for Config.SetupValid. Of several instances starting at once, or a
// restart while a link is live, exactly one issues it (the store's one
// row decides); with replace, a live code is replaced (formd setup-link).
// The code is "" unless the state is SetupIssued. The server prints
// SetupURL of it at start.
func (s *Service) SetupCode(ctx context.Context, replace bool) (string, SetupState, error) {
	code := randomString(24)
	now := s.now()
	put, err := s.st.PutSetupCode(ctx, HashToken(code), now, now.Add(s.cfg.SetupValid), replace)
	if err != nil {
		return "", 0, fmt.Errorf("make setup code: %w", err)
	}
	if put {
		return code, SetupIssued, nil
	}
	if _, err := s.st.SetupCodeHash(ctx, now); err == nil {
		return "", SetupPending, nil
	}
	return "", SetupNotNeeded, nil
}

// SetupURL is the link that a setup code is printed as, under base (the
// server's public URL, such as https://forms.example.org).
func SetupURL(base, code string) string {
	return strings.TrimRight(base, "/") + "/admin/setup?code=" + url.QueryEscape(code)
}

// Setup makes the first account, an owner of every site, with a setup
// code; the code is burnt in the same transaction. ErrSetupCode for a
// wrong, used or expired code, ErrSetupDone once any account exists.
//
// Everything that costs nothing comes first, so that a flood of bogus
// posts costs no password hash (64 MiB each): the address's budget of
// Config.SetupAttempts, then whether setup is done, then the code,
// compared in constant time with the live one's hash.
func (s *Service) Setup(ctx context.Context, code, email, password, ip string) (Account, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	now := s.now()
	if err := s.budget(ctx, "setup:"+ip, ip); err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	live, err := s.st.SetupCodeHash(ctx, now)
	if err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	if code == "" || subtle.ConstantTimeCompare(live, HashToken(code)) != 1 {
		return Account{}, fmt.Errorf("set up: %w", ErrSetupCode)
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	now = s.now()
	a := Account{ID: newID("acc_"), Email: addr, Role: Owner, Sites: []string{AllSites}, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	e := Entry{At: now, Actor: "setup link", Action: "account.add", Target: addr, Detail: scopeDetail(Owner, a.Sites) + " first account"}
	if err := s.st.UseSetupCode(ctx, HashToken(code), now, a, e); err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	return public(a), nil
}

// budget counts one post of a page that takes a one-time code (setup, a
// reset link) against the address: past Config.SetupAttempts without a
// pause of Config.LoginWindow, a *LockedError. Without an address there
// is nothing to count by.
func (s *Service) budget(ctx context.Context, key, ip string) error {
	if ip == "" {
		return nil
	}
	now := s.now()
	attempts, err := s.st.AddLoginAttempt(ctx, []string{key}, now, now.Add(-s.cfg.LoginWindow))
	if err != nil {
		return err
	}
	if attempts[0].Count > s.cfg.SetupAttempts {
		return &LockedError{Until: now.Add(s.cfg.LoginWindow)}
	}
	return nil
}
