package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/problem"
)

// ---- sign in, sign out, set up ----

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Title: "", Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["login.title"]
	pg.Data = h.loginData(safeNext(r.URL.Query().Get("next")), "")
	pg.Flash = flashOf(r.URL.Query().Get("done"))
	if _, err := h.sessions.Authenticate(r); err == nil {
		http.Redirect(w, r, "/admin/forms", http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, "login", pg)
}

// sameOrigin refuses a sign-in or setup posted from another site (login
// CSRF): a browser sends Origin with every POST.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	pg := signedOutPage(w, r, "login.title")
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	email, next := r.PostFormValue("email"), safeNext(r.PostFormValue("next"))
	device := ""
	if c, err := r.Cookie(accounts.DeviceCookie); err == nil {
		device = c.Value
	}
	a, err := h.sessions.LoginDevice(r.Context(), email, r.PostFormValue("password"), h.clientIP(r), device)
	if err == nil {
		if _, err = h.sessions.IssueSession(w, r, a); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
	}
	status := http.StatusUnauthorized
	msg := pg.L.T["login.failed"]
	var locked *accounts.LockedError
	switch {
	case errors.As(err, &locked):
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", itoa(int(locked.RetryAfter(time.Now()).Seconds())+1))
		msg = fmt.Sprintf(pg.L.T["login.locked"], locked.Until.UTC().Format("15:04")+" UTC")
	case errors.Is(err, accounts.ErrPasswordsOff):
		status = http.StatusForbidden
		msg = pg.L.T["login.passwords-off"]
	case !errors.Is(err, accounts.ErrBadCredentials) && !errors.Is(err, accounts.ErrInvalidEmail):
		h.errorPage(w, r, pg, err)
		return
	}
	pg.Error = msg
	pg.Data = h.loginData(next, email)
	h.render(w, status, "login", pg)
}

// loginData is the sign-in page's: where to go after, the e-mail typed,
// and the identity provider's button when there is one.
func (h *Handler) loginData(next, email string) map[string]any {
	d := map[string]any{"Next": next, "Email": email, "SSO": ""}
	if h.SSO != nil {
		d["SSO"] = h.SSO.Name()
		d["SSOStart"] = "/admin/sso/start?next=" + url.QueryEscape(next)
	}
	return d
}

// safeNext keeps a redirect after sign-in inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/admin/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/admin/forms"
	}
	return next
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r)}
	p, err := h.sessions.Authenticate(r)
	if err == nil {
		if err := h.sessions.CheckCSRF(r, p); err != nil {
			h.errorPage(w, r, pg, err)
			return
		}
	}
	if err := h.sessions.ClearSession(w, r); err != nil {
		h.errorPage(w, r, pg, err)
		return
	}
	http.Redirect(w, r, "/admin/login?done=signed-out", http.StatusSeeOther)
}

func (h *Handler) setupPage(w http.ResponseWriter, r *http.Request) {
	pg := signedOutPage(w, r, "setup.title")
	pg.Data = map[string]any{"Code": r.URL.Query().Get("code"), "Email": ""}
	h.render(w, http.StatusOK, "setup", pg)
}

func (h *Handler) setup(w http.ResponseWriter, r *http.Request) {
	pg := signedOutPage(w, r, "setup.title")
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	code, email := r.PostFormValue("code"), r.PostFormValue("email")
	a, err := h.sessions.Setup(r.Context(), code, email, r.PostFormValue("password"), h.clientIP(r))
	if err == nil {
		if _, err = h.sessions.IssueSession(w, r, a); err == nil {
			http.Redirect(w, r, "/admin/forms?done=set-up", http.StatusSeeOther)
			return
		}
	}
	pr := problem.From(err)
	if pr.Status >= 500 {
		h.errorPage(w, r, pg, err)
		return
	}
	if pr.RetryAfter > 0 {
		w.Header().Set("Retry-After", itoa(pr.RetryAfter))
	}
	pg.Error = personError(pg.L, err)
	pg.Data = map[string]any{"Code": code, "Email": email}
	h.render(w, pr.Status, "setup", pg)
}

// resetPage is the page of a password reset link: whose password it sets,
// and the new password. A link that is wrong, used or expired says so.
func (h *Handler) resetPage(w http.ResponseWriter, r *http.Request) {
	pg := signedOutPage(w, r, "reset.title")
	code := r.URL.Query().Get("code")
	a, err := h.sessions.ResetAccount(r.Context(), code)
	if err != nil {
		h.errorPage(w, r, pg, err)
		return
	}
	pg.Data = map[string]any{"Code": code, "Email": a.Email}
	h.render(w, http.StatusOK, "reset", pg)
}

func (h *Handler) reset(w http.ResponseWriter, r *http.Request) {
	pg := signedOutPage(w, r, "reset.title")
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	code := r.PostFormValue("code")
	_, err := h.sessions.ResetPassword(r.Context(), code, r.PostFormValue("password"), h.clientIP(r))
	if err == nil {
		http.Redirect(w, r, "/admin/login?done=password-reset", http.StatusSeeOther)
		return
	}
	pr := problem.From(err)
	if pr.Status >= 500 || pr.Code != problem.CodeInvalidAccount {
		h.errorPage(w, r, pg, err)
		return
	}
	a, aerr := h.sessions.ResetAccount(r.Context(), code)
	if aerr != nil {
		h.errorPage(w, r, pg, aerr)
		return
	}
	pg.Error = personError(pg.L, err)
	pg.Data = map[string]any{"Code": code, "Email": a.Email}
	h.render(w, pr.Status, "reset", pg)
}

// signedOutPage is a page shown before there is a session (sign-in, set-up,
// password reset): in the person's language, titled by the text titleKey.
func signedOutPage(w http.ResponseWriter, r *http.Request, titleKey string) page {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T[titleKey]
	return pg
}
