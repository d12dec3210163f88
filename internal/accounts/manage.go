package accounts

import (
	"context"
	"fmt"
	"strings"
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
// principal who manages it.
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
	e := Entry{At: now, Actor: by.String(), Action: "account.password", Target: a.Email}
	if _, err := s.st.UpdateAccount(ctx, id, Change{PasswordHash: &hash, At: now}, e); err != nil {
		return fmt.Errorf("set password of %s: %w", id, err)
	}
	return nil
}
