package admin

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/problem"
)

// AccountAdmin is what the accounts and tokens page and its API do
// (accounts.Service); each method checks the principal's right and
// records itself in the audit log.
type AccountAdmin interface {
	Accounts(ctx context.Context, by accounts.Principal) ([]accounts.Account, error)
	AddAccount(ctx context.Context, by accounts.Principal, n accounts.NewAccount) (accounts.Account, error)
	ChangeRole(ctx context.Context, by accounts.Principal, id string, role accounts.Role, sites []string) (accounts.Account, error)
	SetDisabled(ctx context.Context, by accounts.Principal, id string, disabled bool) (accounts.Account, error)
	CreateToken(ctx context.Context, by accounts.Principal, accountID, name string) (string, accounts.Token, error)
	CreateDoorToken(ctx context.Context, by accounts.Principal, accountID, name string) (string, accounts.Token, error)
	Tokens(ctx context.Context, by accounts.Principal, accountID string) ([]accounts.Token, error)
	RevokeToken(ctx context.Context, by accounts.Principal, id string) error
	Audit(ctx context.Context, by accounts.Principal, f accounts.AuditFilter) ([]accounts.Entry, error)
	ChangePassword(ctx context.Context, by accounts.Principal, current, password, ip string) error
	SignOutEverywhere(ctx context.Context, by accounts.Principal) (int, error)
	ResetLink(ctx context.Context, by accounts.Principal, id string) (string, time.Time, error)
}

type accountJSON struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Sites     []string  `json:"sites"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"created_at"`
}

func accountOut(a accounts.Account) accountJSON {
	return accountJSON{ID: a.ID, Email: a.Email, Name: a.Name, Role: string(a.Role), Sites: a.Sites, Disabled: a.Disabled, CreatedAt: a.CreatedAt.UTC()}
}

type tokenJSON struct {
	ID         string     `json:"id"`
	AccountID  string     `json:"account_id"`
	Account    string     `json:"account"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func tokenOut(t accounts.Token) tokenJSON {
	return tokenJSON{ID: t.ID, AccountID: t.AccountID, Account: t.AccountEmail, Name: t.Name, CreatedAt: t.CreatedAt.UTC(),
		LastUsedAt: timeOrNil(t.LastUsedAt), RevokedAt: timeOrNil(t.RevokedAt)}
}

func (h *Handler) listAccounts(w http.ResponseWriter, r *http.Request, c call) error {
	list, err := h.Accounts.Accounts(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := make([]accountJSON, len(list))
	for i, a := range list {
		out[i] = accountOut(a)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"accounts": out})
}

func (h *Handler) addAccount(w http.ResponseWriter, r *http.Request, c call) error {
	var req struct {
		Email    string   `json:"email"`
		Name     string   `json:"name"`
		Role     string   `json:"role"`
		Sites    []string `json:"sites"`
		Password string   `json:"password"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"email", "name", "role", "sites": ["…"], "password"}`)
	}
	a, err := h.Accounts.AddAccount(r.Context(), c.p, accounts.NewAccount{Email: req.Email, Name: req.Name, Role: accounts.Role(req.Role), Sites: req.Sites, Password: req.Password})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, accountOut(a))
}

func (h *Handler) changeRole(w http.ResponseWriter, r *http.Request, c call) error {
	var req struct {
		Role  string   `json:"role"`
		Sites []string `json:"sites"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"role": "editor", "sites": ["…"]}`)
	}
	a, err := h.Accounts.ChangeRole(r.Context(), c.p, r.PathValue("id"), accounts.Role(req.Role), req.Sites)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, accountOut(a))
}

func (h *Handler) disableAccount(w http.ResponseWriter, r *http.Request, c call) error {
	return h.setDisabled(w, r, c, true)
}

func (h *Handler) enableAccount(w http.ResponseWriter, r *http.Request, c call) error {
	return h.setDisabled(w, r, c, false)
}

func (h *Handler) setDisabled(w http.ResponseWriter, r *http.Request, c call, disabled bool) error {
	a, err := h.Accounts.SetDisabled(r.Context(), c.p, r.PathValue("id"), disabled)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, accountOut(a))
}

func (h *Handler) listTokens(w http.ResponseWriter, r *http.Request, c call) error {
	list, err := h.Accounts.Tokens(r.Context(), c.p, r.URL.Query().Get("account"))
	if err != nil {
		return err
	}
	out := make([]tokenJSON, len(list))
	for i, t := range list {
		out[i] = tokenOut(t)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, c call) error {
	var req struct {
		Name  string `json:"name"`
		Scope string `json:"scope"`
	}
	if err := decodeJSON(w, r, &req); err != nil || (req.Scope != "" && req.Scope != accounts.ScopeDoor) {
		return problem.New(problem.CodeInvalidRequest, `send {"name": "where the token is used"}, with "scope": "door" for a token that only checks people in`)
	}
	create := h.Accounts.CreateToken
	if req.Scope == accounts.ScopeDoor {
		create = h.Accounts.CreateDoorToken
	}
	token, t, err := create(r.Context(), c.p, r.PathValue("id"), req.Name)
	if err != nil {
		return err
	}
	out := map[string]any{"token": token, "id": t.ID, "account_id": t.AccountID, "name": t.Name, "created_at": t.CreatedAt.UTC()}
	if t.Scope != "" {
		out["scope"] = t.Scope
	}
	return writeJSON(w, http.StatusCreated, out)
}

func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, c call) error {
	if err := h.Accounts.RevokeToken(r.Context(), c.p, r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"revoked": r.PathValue("id")})
}

type auditJSON struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	Site   string    `json:"site"`
	Form   string    `json:"form"`
	Target string    `json:"target"`
	Detail string    `json:"detail"`
}

// ParseAuditCursor reads the audit log's ?before= cursor: "" for the
// newest, else a positive entry id (invalid-request otherwise, never a
// store error).
func ParseAuditCursor(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, problem.New(problem.CodeInvalidRequest, "before must be the next cursor of a previous page: a positive entry id")
	}
	return n, nil
}

// changePassword is POST /v1/admin/me/password {"current", "password"}:
// the caller's own account; its other sessions end.
func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request, c call) error {
	var req struct {
		Current  string `json:"current"`
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"current": "…", "password": "…"}`)
	}
	if err := h.Accounts.ChangePassword(r.Context(), c.p, req.Current, req.Password, h.ClientIP(r)); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"changed": true})
}

// signOutEverywhere is POST /v1/admin/me/sign-out-everywhere: every
// session of the caller's account ends.
func (h *Handler) signOutEverywhere(w http.ResponseWriter, r *http.Request, c call) error {
	n, err := h.Accounts.SignOutEverywhere(r.Context(), c.p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ended": n})
}

// resetLink is POST /v1/admin/accounts/{id}/reset-link: a one-time link
// that sets the account's password, shown this once.
func (h *Handler) resetLink(w http.ResponseWriter, r *http.Request, c call) error {
	code, expires, err := h.Accounts.ResetLink(r.Context(), c.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, map[string]any{"path": accounts.ResetURL(code), "expires_at": expires.UTC()})
}

// auditLog is GET /v1/admin/audit-log?form=&before=&limit=: who did what,
// newest first, on the principal's sites.
func (h *Handler) auditLog(w http.ResponseWriter, r *http.Request, c call) error {
	q := r.URL.Query()
	f := accounts.AuditFilter{Form: q.Get("form")}
	var err error
	if f.Before, err = ParseAuditCursor(q.Get("before")); err != nil {
		return err
	}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	if f.Form != "" {
		fm, err := h.Authorize(c.p, f.Form, accounts.Read)
		if err != nil {
			return err
		}
		f.Sites = []string{fm.Def.Site}
	}
	list, err := h.Accounts.Audit(r.Context(), c.p, f)
	if err != nil {
		return err
	}
	out := make([]auditJSON, len(list))
	for i, e := range list {
		out[i] = auditJSON{e.ID, e.At.UTC(), e.Actor, e.Action, e.Site, e.Form, e.Target, e.Detail}
	}
	var next *string
	if len(list) > 0 && len(list) == max(f.Limit, accounts.DefaultAuditLimit) {
		n := strconv.FormatInt(list[len(list)-1].ID, 10)
		next = &n
	}
	return writeJSON(w, http.StatusOK, map[string]any{"entries": out, "next": next})
}
