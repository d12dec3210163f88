package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/problem"
)

// ---- accounts and tokens ----

type accountsView struct {
	Accounts []accounts.Account
	Tokens   []accounts.Token
	NewToken string
	// ResetLink is a reset link just made, shown this once, until
	// ResetExpires.
	ResetLink    string
	ResetExpires time.Time
	Roles        []string
	Manage       bool
}

func (h *Handler) accountsPage(w http.ResponseWriter, r *http.Request, p page) error {
	return h.accountsShown(w, r, p, http.StatusOK, accountsView{})
}

func sitesOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

func (h *Handler) addAccount(w http.ResponseWriter, r *http.Request, p page) error {
	_, err := h.adm.Accounts.AddAccount(r.Context(), p.P, accounts.NewAccount{Email: r.PostFormValue("email"), Name: r.PostFormValue("name"),
		Role: accounts.Role(r.PostFormValue("role")), Sites: sitesOf(r.PostFormValue("sites")), Password: r.PostFormValue("password")})
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "account-added")
}

// accountsFailed shows the accounts page again with what was wrong, for
// a mistake of the person; anything else is an error page.
func (h *Handler) accountsFailed(w http.ResponseWriter, r *http.Request, p page, err error) error {
	pr := problem.From(err)
	if pr.Status >= 500 || pr.Status == http.StatusForbidden || pr.Status == http.StatusNotFound {
		return err
	}
	p.Error = personError(p.L, err)
	return h.accountsShown(w, r, p, pr.Status, accountsView{})
}

func (h *Handler) accountAction(w http.ResponseWriter, r *http.Request, p page) error {
	id := r.PathValue("id")
	var err error
	switch r.PathValue("action") {
	case "role":
		_, err = h.adm.Accounts.ChangeRole(r.Context(), p.P, id, accounts.Role(r.PostFormValue("role")), sitesOf(r.PostFormValue("sites")))
	case "disable":
		_, err = h.adm.Accounts.SetDisabled(r.Context(), p.P, id, true)
	case "enable":
		_, err = h.adm.Accounts.SetDisabled(r.Context(), p.P, id, false)
	case "reset":
		return h.resetAccount(w, r, p, id)
	default:
		return problem.New(problem.CodeNotFound, "")
	}
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "account-"+r.PathValue("action"))
}

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, p page) error {
	acc := r.PostFormValue("account")
	if acc == "" {
		acc = p.P.AccountID
	}
	token, _, err := h.adm.Accounts.CreateToken(r.Context(), p.P, acc, r.PostFormValue("name"))
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	// Shown once, on this answer only: it is never stored or shown again.
	p.Flash = "token-created"
	return h.accountsShown(w, r, p, http.StatusCreated, accountsView{NewToken: token})
}

// accountsShown renders the accounts page with status and something shown
// this once (a new token, a reset link) or what was wrong.
func (h *Handler) accountsShown(w http.ResponseWriter, r *http.Request, p page, status int, v accountsView) error {
	v.Roles, v.Manage = []string{"owner", "editor", "viewer"}, p.CanAnywhere("manage")
	var err error
	if v.Manage {
		if v.Accounts, err = h.adm.Accounts.Accounts(r.Context(), p.P); err != nil {
			return err
		}
	}
	if v.Tokens, err = h.adm.Accounts.Tokens(r.Context(), p.P, ""); err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "accounts", p.L.T["nav.accounts"], v
	h.render(w, status, "accounts", p)
	return nil
}

// resetAccount makes a one-time reset link for another account and shows
// it this once, with when it expires.
func (h *Handler) resetAccount(w http.ResponseWriter, r *http.Request, p page, id string) error {
	code, expires, err := h.adm.Accounts.ResetLink(r.Context(), p.P, id)
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	p.Flash = "reset-link"
	return h.accountsShown(w, r, p, http.StatusCreated, accountsView{ResetLink: h.linkBase(r) + accounts.ResetURL(code), ResetExpires: expires})
}
