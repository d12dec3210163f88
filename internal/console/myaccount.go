package console

import (
	"net/http"

	"github.com/formd/formd/internal/problem"
)

// ---- one's own account ----

func (h *Handler) myAccount(w http.ResponseWriter, r *http.Request, p page) error {
	p.Nav, p.Title = "account", p.L.T["account.title"]
	h.render(w, http.StatusOK, "account", p)
	return nil
}

func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request, p page) error {
	err := h.adm.Accounts.ChangePassword(r.Context(), p.P, r.PostFormValue("current"), r.PostFormValue("password"), h.clientIP(r))
	if err != nil {
		pr := problem.From(err)
		if pr.Status >= 500 || pr.Status == http.StatusForbidden {
			return err
		}
		if pr.RetryAfter > 0 {
			w.Header().Set("Retry-After", itoa(pr.RetryAfter))
		}
		p.Error = pr.Detail
		p.Nav, p.Title = "account", p.L.T["account.title"]
		h.render(w, pr.Status, "account", p)
		return nil
	}
	return back(w, r, "/admin/account", "password-changed")
}

func (h *Handler) signOutEverywhere(w http.ResponseWriter, r *http.Request, p page) error {
	if _, err := h.adm.Accounts.SignOutEverywhere(r.Context(), p.P); err != nil {
		return err
	}
	if err := h.sessions.ClearSession(w, r); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/login?done=signed-out-everywhere", http.StatusSeeOther)
	return nil
}

func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, p page) error {
	if err := h.adm.Accounts.RevokeToken(r.Context(), p.P, r.PathValue("id")); err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "token-revoked")
}
