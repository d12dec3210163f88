package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/formd/formd/internal/problem"
)

var (
	// ErrPasswordsOff means password sign-in is switched off
	// (Config.PasswordsOff) and the account is not the break-glass owner.
	ErrPasswordsOff = problem.Sentinel("password sign-in is off on this server: sign in with the identity provider", problem.CodePasswordsOff)
	// ErrNoAccess means an identity provider vouched for a person to whom
	// formd gives nothing: no mapped role, or no account and none may be
	// made.
	ErrNoAccess = problem.Sentinel("you are signed in at the identity provider, but formd gives you no role", problem.CodeSSONoAccess)
)

// External is a person an identity provider signed in: a verified e-mail
// and what the owner's claim mapping gives them (Mapped false: nothing).
type External struct {
	Provider string // the issuer, for the audit log
	Subject  string
	Email    string
	Name     string
	Role     Role
	Sites    []string
	Mapped   bool
}

// SignInExternal finds (or, when create, makes) the account of a person an
// identity provider signed in, matched by verified e-mail, and sets its
// role and sites to what the mapping gives, so that a change of groups at
// the provider takes effect at the next sign-in. A person with no mapped
// role gets ErrNoAccess, whatever their account held; so does a disabled
// account. The account is ready for IssueSession. Each outcome is in the
// audit log.
func (s *Service) SignInExternal(ctx context.Context, x External, create bool, ip string) (Account, error) {
	addr, err := NormalizeEmail(x.Email)
	if err != nil {
		return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
	}
	now := s.now()
	who := fmt.Sprintf("ip=%s issuer=%s sub=%s", ip, x.Provider, x.Subject)
	refuse := func(why string) (Account, error) {
		if err := s.st.AppendAudit(ctx, Entry{At: now, Actor: addr + " (single sign-on)", Action: "login.sso.refused", Target: addr, Detail: why + " " + who}); err != nil {
			return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
		}
		return Account{}, fmt.Errorf("sign in with %s: %s: %w", x.Provider, why, ErrNoAccess)
	}
	if !x.Mapped {
		return refuse("no rule of the claim mapping matches")
	}
	sites, err := normalizeSites(x.Sites)
	if err != nil {
		return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
	}
	a, err := s.st.AccountByEmail(ctx, addr)
	if errors.Is(err, ErrNotFound) {
		if !create {
			return refuse("no account has this e-mail and --oidc-create-accounts is off")
		}
		a = Account{ID: newID("acc_"), Email: addr, Name: strings.TrimSpace(x.Name), Role: x.Role, Sites: sites, CreatedAt: now, UpdatedAt: now}
		e := Entry{At: now, Actor: addr + " (single sign-on)", Action: "account.add", Target: addr, Detail: scopeDetail(x.Role, sites) + " " + who}
		err = s.st.CreateAccount(ctx, a, e)
		if errors.Is(err, ErrEmailTaken) {
			// Made by a sign-in of the same person a moment ago.
			a, err = s.st.AccountByEmail(ctx, addr)
		}
	}
	if err != nil {
		return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
	}
	if a.Disabled {
		return refuse("the account is disabled")
	}
	if a.Role != x.Role || !slices.Equal(a.Sites, sites) {
		role := x.Role
		e := Entry{At: now, Actor: addr + " (single sign-on)", Action: "account.role", Target: addr,
			Detail: "from the claim mapping: " + scopeDetail(role, sites)}
		if a, err = s.st.UpdateAccount(ctx, a.ID, Change{Role: &role, Sites: sites, At: now}, e); err != nil {
			return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
		}
	}
	if err := s.st.AppendAudit(ctx, Entry{At: now, Actor: addr, Action: "login.sso", Target: addr, Detail: who}); err != nil {
		return Account{}, fmt.Errorf("sign in with %s: %w", x.Provider, err)
	}
	return public(a), nil
}

// passwordAllowed says whether the account of e-mail addr may sign in
// with a password: always, unless Config.PasswordsOff, and then only the
// break-glass owner.
func (s *Service) passwordAllowed(addr string) bool {
	return !s.cfg.PasswordsOff || (s.cfg.BreakGlass != "" && addr == s.cfg.BreakGlass)
}
