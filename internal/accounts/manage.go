package accounts

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// NewAccount is what AddAccount needs.
type NewAccount struct {
	Email    string
	Name     string
	Role     Role
	Sites    []string // AllSites for every site
	Password string
}

// AddAccount creates an account. The principal must manage accounts on
// every one of its sites.
func (s *Service) AddAccount(ctx context.Context, by Principal, n NewAccount) (Account, error) {
	email, err := NormalizeEmail(n.Email)
	if err != nil {
		return Account{}, fmt.Errorf("add account: %w", err)
	}
	role, err := ParseRole(string(n.Role))
	if err != nil {
		return Account{}, fmt.Errorf("add account: %w", err)
	}
	sites, err := normalizeSites(n.Sites)
	if err != nil {
		return Account{}, fmt.Errorf("add account: %w", err)
	}
	if !by.CanManage(sites) {
		return Account{}, fmt.Errorf("add account for sites %s: %w", strings.Join(sites, ","), ErrForbidden)
	}
	hash, err := s.hash(ctx, n.Password)
	if err != nil {
		return Account{}, fmt.Errorf("add account: %w", err)
	}
	now := s.now()
	a := Account{ID: newID("acc_"), Email: email, Name: strings.TrimSpace(n.Name), Role: role, Sites: sites,
		PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	e := Entry{At: now, Actor: by.String(), Action: "account.add", Target: email, Detail: scopeDetail(role, sites)}
	if err := s.st.CreateAccount(ctx, a, e); err != nil {
		return Account{}, fmt.Errorf("add account %s: %w", email, err)
	}
	return public(a), nil
}

func scopeDetail(role Role, sites []string) string {
	return fmt.Sprintf("role=%s sites=%s", role, strings.Join(sites, ","))
}

// mayManage says whether by may see and change account a: a manager of
// all its sites, or the account itself when self is allowed.
func mayManage(by Principal, a Account, self bool) bool {
	return (self && by.AccountID != "" && by.AccountID == a.ID) || by.CanManage(a.Sites)
}

// Account reads an account the principal manages, or its own.
func (s *Service) Account(ctx context.Context, by Principal, id string) (Account, error) {
	a, err := s.st.AccountByID(ctx, id)
	if err != nil {
		return Account{}, fmt.Errorf("read account %s: %w", id, err)
	}
	if !mayManage(by, a, true) {
		return Account{}, fmt.Errorf("read account %s: %w", id, ErrNotFound)
	}
	return public(a), nil
}

// AccountByEmail is Account by e-mail address.
func (s *Service) AccountByEmail(ctx context.Context, by Principal, email string) (Account, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, fmt.Errorf("read account: %w", err)
	}
	a, err := s.st.AccountByEmail(ctx, addr)
	if err != nil {
		return Account{}, fmt.Errorf("read account %s: %w", addr, err)
	}
	if !mayManage(by, a, true) {
		return Account{}, fmt.Errorf("read account %s: %w", addr, ErrNotFound)
	}
	return public(a), nil
}

// Accounts lists the accounts the principal manages, by e-mail.
func (s *Service) Accounts(ctx context.Context, by Principal) ([]Account, error) {
	if !by.roleAllows(ManageAccounts) {
		return nil, fmt.Errorf("list accounts: %w", ErrForbidden)
	}
	all, err := s.st.ListAccounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", err)
	}
	out := all[:0]
	for _, a := range all {
		if mayManage(by, a, false) {
			out = append(out, public(a))
		}
	}
	return out, nil
}

// change applies c to the account id after checking that by manages it
// (and, for a new scope, the new sites too).
func (s *Service) change(ctx context.Context, by Principal, id string, c Change, action, detail string) (Account, error) {
	a, err := s.st.AccountByID(ctx, id)
	if err != nil {
		return Account{}, err
	}
	switch {
	case !mayManage(by, a, true):
		return Account{}, ErrNotFound // not even visible to by
	case !mayManage(by, a, false) || (c.Sites != nil && !by.CanManage(c.Sites)):
		return Account{}, ErrForbidden
	}
	c.At = s.now()
	e := Entry{At: c.At, Actor: by.String(), Action: action, Target: a.Email, Detail: detail}
	a, err = s.st.UpdateAccount(ctx, id, c, e)
	if err != nil {
		return Account{}, err
	}
	return public(a), nil
}

// ChangeRole gives an account a new role and sites. The principal must
// manage both the account's present sites and the new ones.
func (s *Service) ChangeRole(ctx context.Context, by Principal, id string, role Role, sites []string) (Account, error) {
	role, err := ParseRole(string(role))
	if err != nil {
		return Account{}, fmt.Errorf("change role: %w", err)
	}
	sites, err = normalizeSites(sites)
	if err != nil {
		return Account{}, fmt.Errorf("change role: %w", err)
	}
	a, err := s.change(ctx, by, id, Change{Role: &role, Sites: sites}, "account.role", scopeDetail(role, sites))
	if err != nil {
		return Account{}, fmt.Errorf("change role of %s: %w", id, err)
	}
	return a, nil
}

// SetDisabled disables an account (ending its sessions; its tokens stop
// working) or enables it again.
func (s *Service) SetDisabled(ctx context.Context, by Principal, id string, disabled bool) (Account, error) {
	action := "account.enable"
	if disabled {
		action = "account.disable"
	}
	a, err := s.change(ctx, by, id, Change{Disabled: &disabled}, action, "")
	if err != nil {
		return Account{}, fmt.Errorf("%s %s: %w", strings.TrimPrefix(action, "account."), id, err)
	}
	return a, nil
}

// SetPassword gives an account a new password: the account itself, or a
// principal who manages it (formd users passwd, as the operator). Every
// session of the account ends, in the same transaction.
func (s *Service) SetPassword(ctx context.Context, by Principal, id, password string) error {
	a, err := s.st.AccountByID(ctx, id)
	if err != nil {
		return fmt.Errorf("set password of %s: %w", id, err)
	}
	if !mayManage(by, a, true) {
		return fmt.Errorf("set password of %s: %w", id, ErrForbidden)
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return fmt.Errorf("set password: %w", err)
	}
	now := s.now()
	e := Entry{At: now, Actor: by.String(), Action: "account.password", Target: a.Email, Detail: "sessions ended"}
	if _, err := s.st.UpdateAccount(ctx, id, Change{PasswordHash: &hash, EndSessions: true, At: now}, e); err != nil {
		return fmt.Errorf("set password of %s: %w", id, err)
	}
	return nil
}

// ChangePassword changes the signed-in account's own password: the
// current one is required (checked like a sign-in, and counted against
// the same pair, so a stolen session cannot guess it fast). Every other
// session of the account ends in the same transaction; the one asking
// stays signed in.
func (s *Service) ChangePassword(ctx context.Context, by Principal, current, password, ip string) error {
	if by.AccountID == "" {
		return fmt.Errorf("change password: %w", ErrForbidden)
	}
	if err := CheckPassword(password); err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	a, err := s.st.AccountByID(ctx, by.AccountID)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	now := s.now()
	pair := "pair:" + a.Email + " " + ip
	attempts, err := s.st.AddLoginAttempt(ctx, []string{pair}, now, now.Add(-s.cfg.LoginWindow))
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	if locked, _ := s.throttle(attempts, now); locked != nil {
		return fmt.Errorf("change password: %w", locked)
	}
	ok, err := s.verify(ctx, a.PasswordHash, current)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	if !ok {
		return fmt.Errorf("change password: %w", ErrWrongPassword)
	}
	hash, err := s.hash(ctx, password)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	now = s.now()
	e := Entry{At: now, Actor: by.String(), Action: "account.password", Target: a.Email, Detail: "changed by the account; other sessions ended"}
	c := Change{PasswordHash: &hash, EndSessions: true, KeepSession: by.session, At: now}
	if by.session == nil {
		c.KeepSession = []byte{} // a token asked: end every session
	}
	if _, err := s.st.UpdateAccount(ctx, a.ID, c, e); err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	return nil
}

// SignOutEverywhere ends every session of the principal's account, the
// one asking too, and says how many ended.
func (s *Service) SignOutEverywhere(ctx context.Context, by Principal) (int, error) {
	if by.AccountID == "" {
		return 0, fmt.Errorf("sign out everywhere: %w", ErrForbidden)
	}
	now := s.now()
	n, err := s.st.EndSessions(ctx, by.AccountID, nil, Entry{At: now, Actor: by.String(), Action: "logout.everywhere", Target: by.Email})
	if err != nil {
		return 0, fmt.Errorf("sign out everywhere: %w", err)
	}
	return n, nil
}

// ResetLink makes a one-time password reset code for another account,
// valid for Config.ResetValid: the principal must manage the account. The
// code is returned once (ResetURL makes the link of it); only its hash is
// kept. One's own password is changed with ChangePassword instead.
func (s *Service) ResetLink(ctx context.Context, by Principal, id string) (string, time.Time, error) {
	a, err := s.st.AccountByID(ctx, id)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("make reset link: %w", err)
	}
	switch {
	case !mayManage(by, a, true):
		return "", time.Time{}, fmt.Errorf("make reset link for %s: %w", id, ErrNotFound)
	case !mayManage(by, a, false):
		return "", time.Time{}, fmt.Errorf("make reset link for %s: %w", a.Email, ErrForbidden)
	}
	code := randomString(32)
	now := s.now()
	expires := now.Add(s.cfg.ResetValid)
	e := Entry{At: now, Actor: by.String(), Action: "account.reset-link", Target: a.Email, Detail: "expires=" + expires.UTC().Format(time.RFC3339)}
	if err := s.st.CreatePasswordReset(ctx, HashToken(code), a.ID, now, expires, e); err != nil {
		return "", time.Time{}, fmt.Errorf("make reset link for %s: %w", a.Email, err)
	}
	return code, expires, nil
}

// ResetURL is the path of a reset link, to put after the server's
// address.
func ResetURL(code string) string { return "/admin/reset?code=" + url.QueryEscape(code) }

// ResetAccount is the account a live reset code is for (its page says
// whose password is being set); ErrResetInvalid.
func (s *Service) ResetAccount(ctx context.Context, code string) (Account, error) {
	a, err := s.st.PasswordResetAccount(ctx, HashToken(code), s.now())
	if err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	return public(a), nil
}

// ResetPassword sets the password of a reset code's account and burns
// the code, ending every session of the account, in one transaction. The
// code is checked (and the address's budget counted) before the password
// is hashed.
func (s *Service) ResetPassword(ctx context.Context, code, password, ip string) (Account, error) {
	if err := CheckPassword(password); err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	if err := s.budget(ctx, "reset:"+ip, ip); err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	hash := HashToken(code)
	a, err := s.st.PasswordResetAccount(ctx, hash, s.now())
	if err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	phc, err := s.hash(ctx, password)
	if err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	now := s.now()
	e := Entry{At: now, Actor: "reset link", Action: "account.password", Target: a.Email, Detail: "set with a reset link; sessions ended; ip=" + ip}
	if err := s.st.UsePasswordReset(ctx, hash, a.ID, now, phc, e); err != nil {
		return Account{}, fmt.Errorf("reset password: %w", err)
	}
	return public(a), nil
}
