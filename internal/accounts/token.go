package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// TokenPrefix starts every API token, so that a leaked one is easy to
// recognize (and to search for in code).
const TokenPrefix = "fmd_"

// AdminTokenID is the id the admin token (printed at first start, made
// again by formd token) is listed and revoked by.
const AdminTokenID = "admin"

// MaxTokenName is the longest name of an API token, in bytes.
const MaxTokenName = 100

// NewToken makes an API token (fmd_ and 32 random bytes, base64url) and
// the hash the store keeps of it: never the token itself. The legacy admin
// token has the same form.
func NewToken() (token string, hash []byte) {
	token = TokenPrefix + randomString(32)
	return token, HashToken(token)
}

// HashToken is what the store keeps of a token, session id or setup code:
// its SHA-256. They are 32 random bytes, so a fast hash is enough.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported systems
	return base64.RawURLEncoding.EncodeToString(b)
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID is an id for an account or token: a prefix and 80 random bits,
// short enough to type at the command line.
func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + strings.ToLower(idEncoding.EncodeToString(b))
}

// CreateToken makes an API token for an account: the account itself, or a
// principal who manages it. The token carries the account's role and sites
// (as they are when it is used) and is returned once; only its hash is
// kept.
func (s *Service) CreateToken(ctx context.Context, by Principal, accountID, name string) (string, Token, error) {
	return s.createToken(ctx, by, accountID, name, "")
}

// CreateDoorToken makes a door token for an account (ScopeDoor): it checks
// people in on the account's sites and can do nothing else, so a
// volunteer's phone that is lost exposes no more than the door's roster.
func (s *Service) CreateDoorToken(ctx context.Context, by Principal, accountID, name string) (string, Token, error) {
	return s.createToken(ctx, by, accountID, name, ScopeDoor)
}

func (s *Service) createToken(ctx context.Context, by Principal, accountID, name, scope string) (string, Token, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > MaxTokenName {
		return "", Token{}, fmt.Errorf("create token: %w", ErrInvalidTokenName)
	}
	a, err := s.st.AccountByID(ctx, accountID)
	if err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	if !mayManage(by, a, true) {
		return "", Token{}, fmt.Errorf("create token for %s: %w", a.Email, ErrForbidden)
	}
	if a.Disabled {
		return "", Token{}, fmt.Errorf("create token for %s: the account is disabled: %w", a.Email, ErrForbidden)
	}
	token, hash := NewToken()
	now := s.now()
	t := Token{ID: newID("tok_"), AccountID: a.ID, AccountEmail: a.Email, Name: name, CreatedAt: now, Scope: scope}
	if by.AccountID != a.ID {
		t.CreatedBy = by.String()
	}
	e := Entry{At: now, Actor: by.String(), Action: "token.create", Target: t.ID, Detail: fmt.Sprintf("account=%s name=%q", a.Email, name)}
	if scope != "" {
		e.Detail += " scope=" + scope
	}
	if err := s.st.CreateAPIToken(ctx, t, hash, e); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	return token, t, nil
}

// Tokens lists the tokens of an account ("" for every account the
// principal manages, and its own), newest first.
func (s *Service) Tokens(ctx context.Context, by Principal, accountID string) ([]Token, error) {
	allowed := map[string]bool{}
	if accountID != "" {
		a, err := s.st.AccountByID(ctx, accountID)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		if !mayManage(by, a, true) {
			return nil, fmt.Errorf("list tokens of %s: %w", a.Email, ErrForbidden)
		}
		allowed[a.ID] = true
	} else {
		all, err := s.st.ListAccounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		for _, a := range all {
			allowed[a.ID] = mayManage(by, a, true)
		}
	}
	ts, err := s.st.ListAPITokens(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := ts[:0]
	for _, t := range ts {
		if allowed[t.AccountID] {
			out = append(out, t)
		}
	}
	// The admin token is listed to whoever may manage its account (while
	// it has none, to owners of every site), beside the account's own.
	admin, err := s.st.AdminToken(ctx)
	if errors.Is(err, ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	if ok, err := s.mayManageAdminToken(ctx, by, admin); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	} else if ok && (accountID == "" || accountID == admin.AccountID) {
		if admin.AccountID != "" {
			a, err := s.st.AccountByID(ctx, admin.AccountID)
			if err != nil {
				return nil, fmt.Errorf("list tokens: %w", err)
			}
			admin.AccountEmail = a.Email
		}
		out = append(out, admin)
	}
	return out, nil
}

// mayManageAdminToken says whether by may see and revoke the admin token:
// as it may its account's tokens, or, while it has none, as an owner of
// every site.
func (s *Service) mayManageAdminToken(ctx context.Context, by Principal, t Token) (bool, error) {
	if t.AccountID == "" {
		return by.CanManage([]string{AllSites}), nil
	}
	a, err := s.st.AccountByID(ctx, t.AccountID)
	if err != nil {
		return false, err
	}
	return mayManage(by, a, true), nil
}

// RevokeToken revokes a token of an account the principal manages, or of
// its own. It stops working at once.
func (s *Service) RevokeToken(ctx context.Context, by Principal, id string) error {
	if id == AdminTokenID {
		return s.revokeAdminToken(ctx, by)
	}
	t, err := s.st.APITokenByID(ctx, id)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	a, err := s.st.AccountByID(ctx, t.AccountID)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	if !mayManage(by, a, true) {
		return fmt.Errorf("revoke token %s: %w", id, ErrNotFound)
	}
	now := s.now()
	e := Entry{At: now, Actor: by.String(), Action: "token.revoke", Target: id, Detail: fmt.Sprintf("account=%s name=%q", a.Email, t.Name)}
	if err := s.st.RevokeAPIToken(ctx, id, now, e); err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	return nil
}

// revokeAdminToken revokes the admin token; it stays revoked across
// restarts until formd token makes a new one.
func (s *Service) revokeAdminToken(ctx context.Context, by Principal) error {
	t, err := s.st.AdminToken(ctx)
	if err != nil {
		return fmt.Errorf("revoke the admin token: %w", err)
	}
	if ok, err := s.mayManageAdminToken(ctx, by, t); err != nil {
		return fmt.Errorf("revoke the admin token: %w", err)
	} else if !ok {
		return fmt.Errorf("revoke the admin token: %w", ErrNotFound)
	}
	now := s.now()
	e := Entry{At: now, Actor: by.String(), Action: "token.revoke", Target: AdminTokenID, Detail: "name=\"admin token\""}
	if err := s.st.RevokeAdminToken(ctx, now, e); err != nil {
		return fmt.Errorf("revoke the admin token: %w", err)
	}
	return nil
}

// authenticateToken finds the principal of an API token, or of the admin
// token: its account's, once the first owner of every site has it.
func (s *Service) authenticateToken(ctx context.Context, token string) (Principal, error) {
	hash := HashToken(token)
	t, a, err := s.st.APITokenByHash(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return s.authenticateAdminToken(ctx, hash)
	case err != nil:
		return Principal{}, fmt.Errorf("check token: %w", err)
	case !t.RevokedAt.IsZero() || a.Disabled:
		return Principal{}, fmt.Errorf("token revoked or account disabled: %w", ErrUnauthenticated)
	}
	now := s.now()
	if t.LastUsedAt.Before(now.Add(-touchEvery)) {
		if err := s.st.TouchAPIToken(ctx, t.ID, now, now.Add(-touchEvery)); err != nil {
			return Principal{}, fmt.Errorf("record token use: %w", err)
		}
	}
	p := a.principal(ViaToken)
	p.TokenID = t.ID
	p.TokenBy = t.CreatedBy
	p.Scope = t.Scope
	return p, nil
}

func (s *Service) authenticateAdminToken(ctx context.Context, hash []byte) (Principal, error) {
	t, err := s.st.AdminTokenByHash(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return Principal{}, fmt.Errorf("token: %w", ErrUnauthenticated)
	case err != nil:
		return Principal{}, fmt.Errorf("check token: %w", err)
	case !t.RevokedAt.IsZero():
		return Principal{}, fmt.Errorf("admin token revoked: %w", ErrUnauthenticated)
	case t.AccountID == "":
		return legacyAdmin(), nil
	}
	a, err := s.st.AccountByID(ctx, t.AccountID)
	if err != nil {
		return Principal{}, fmt.Errorf("check admin token: %w", err)
	}
	if a.Disabled {
		return Principal{}, fmt.Errorf("admin token's account disabled: %w", ErrUnauthenticated)
	}
	p := a.principal(ViaToken)
	p.TokenID = AdminTokenID
	return p, nil
}
