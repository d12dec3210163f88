package console

import (
	"net/http"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/accounts/sso"
	"github.com/formd/formd/internal/problem"
)

// SSO is the console's side of single sign-on (sso.Provider).
type SSO interface {
	Name() string
	Start(w http.ResponseWriter, r *http.Request, base, next string, secure bool)
	Finish(w http.ResponseWriter, r *http.Request, base string, secure bool) (sso.Identity, error)
}

// secure says whether cookies of this request are Secure.
func (h *Handler) secure(r *http.Request) bool {
	return r.TLS != nil || h.IsHTTPS != nil && h.IsHTTPS(r)
}

// ssoStart sends the browser to the identity provider.
func (h *Handler) ssoStart(w http.ResponseWriter, r *http.Request) {
	if h.SSO == nil {
		h.errorPage(w, r, page{L: pickLang(w, r)}, problem.New(problem.CodeNotFound, "single sign-on is not configured"))
		return
	}
	h.SSO.Start(w, r, h.linkBase(r), safeNext(r.URL.Query().Get("next")), h.secure(r))
}

// ssoCallback finishes a sign-in the provider sends back: the identity it
// vouches for, the account the mapping gives (or a page saying there is
// none), and a formd session.
func (h *Handler) ssoCallback(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.Path}
	pg.Title = pg.L.T["login.title"]
	if h.SSO == nil {
		h.errorPage(w, r, pg, problem.New(problem.CodeNotFound, "single sign-on is not configured"))
		return
	}
	id, err := h.SSO.Finish(w, r, h.linkBase(r), h.secure(r))
	if err != nil {
		// What the provider or the token check said helps the person and
		// the owner (an expired token, another client's): it names no
		// secret, so the page says it too.
		pr := problem.From(err)
		h.errorPage(w, r, pg, problem.New(pr.Code, err.Error()))
		return
	}
	a, err := h.sessions.SignInExternal(r.Context(), accounts.External{Provider: id.Issuer, Subject: id.Subject,
		Email: id.Email, Name: id.Name, Role: id.Role, Sites: id.Sites, Mapped: id.Mapped}, h.SSOCreate, h.clientIP(r))
	if err == nil {
		_, err = h.sessions.IssueSession(w, r, a)
	}
	if err != nil {
		h.errorPage(w, r, pg, err)
		return
	}
	http.Redirect(w, r, safeNext(id.Next), http.StatusSeeOther)
}
