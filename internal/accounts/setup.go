package accounts

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// SetupCode makes a new one-time setup code while no account exists,
// replacing any earlier one, valid for Config.SetupValid; ok is false (and
// the code empty) once an account exists. The server prints SetupURL of it
// at start.
func (s *Service) SetupCode(ctx context.Context) (code string, ok bool, err error) {
	code = randomString(24)
	ok, err = s.st.PutSetupCode(ctx, HashToken(code), s.now().Add(s.cfg.SetupValid))
	if err != nil {
		return "", false, fmt.Errorf("make setup code: %w", err)
	}
	if !ok {
		return "", false, nil
	}
	return code, true, nil
}

// SetupURL is the link that a setup code is printed as, under base (the
// server's public URL, such as https://forms.example.org).
func SetupURL(base, code string) string {
	return strings.TrimRight(base, "/") + "/admin/setup?code=" + url.QueryEscape(code)
}

// Setup makes the first account, an owner of every site, with a setup
// code; the code is burnt in the same transaction. ErrSetupCode for a
// wrong, used or expired code, ErrSetupDone once any account exists.
func (s *Service) Setup(ctx context.Context, code, email, password string) (Account, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	if code == "" {
		return Account{}, fmt.Errorf("set up: %w", ErrSetupCode)
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	now := s.now()
	a := Account{ID: newID("acc_"), Email: addr, Role: Owner, Sites: []string{AllSites}, PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	e := Entry{At: now, Actor: "setup link", Action: "account.add", Target: addr, Detail: scopeDetail(Owner, a.Sites) + " first account"}
	if err := s.st.UseSetupCode(ctx, HashToken(code), now, a, e); err != nil {
		return Account{}, fmt.Errorf("set up: %w", err)
	}
	return public(a), nil
}
