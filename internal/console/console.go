// Package console is the owner's web console at /admin/: server-rendered
// pages (html/template, embedded, English and Simplified Chinese) that
// work without JavaScript, enhanced by one small script that refreshes
// live counts. Every page reads, and every button acts, through the same
// Go code as the JSON admin API (package admin): scope checks, actions and
// the audit log live there once.
//
// Sessions are accounts.Service's: an HttpOnly, SameSite=Lax cookie
// (Secure under TLS), a CSRF token in every form that changes anything,
// the sign-in rate limit, and sign-out.
package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/accounts/sso"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/problem"
)

// Sessions is the sign-in side of accounts.Service.
type Sessions interface {
	Authenticate(r *http.Request) (accounts.Principal, error)
	CheckCSRF(r *http.Request, p accounts.Principal) error
	LoginDevice(ctx context.Context, email, password, ip, device string) (accounts.Account, error)
	IssueSession(w http.ResponseWriter, r *http.Request, a accounts.Account) (accounts.Principal, error)
	ClearSession(w http.ResponseWriter, r *http.Request) error
	Setup(ctx context.Context, code, email, password, ip string) (accounts.Account, error)
	ResetAccount(ctx context.Context, code string) (accounts.Account, error)
	ResetPassword(ctx context.Context, code, password, ip string) (accounts.Account, error)
	SignInExternal(ctx context.Context, x accounts.External, create bool, ip string) (accounts.Account, error)
}

// Handler serves /admin/.
type Handler struct {
	adm      *admin.Handler
	sessions Sessions
	trusted  []netip.Prefix
	log      *slog.Logger
	// BackupFailure, when set, says whether the last scheduled backup
	// failed, when and why: the pages then show a notice.
	BackupFailure func() (at time.Time, reason string, failed bool)
	// PublicURL (--public-url) is where the links the console makes (a
	// reset link) point; without it they are made from the request, its
	// scheme https only under TLS or behind a trusted proxy's
	// X-Forwarded-Proto (IsHTTPS).
	PublicURL string
	IsHTTPS   func(*http.Request) bool
	// SSO, when set, signs people in through the identity provider
	// (--oidc-issuer); SSOCreate makes accounts for verified e-mails at
	// first sign-in (--oidc-create-accounts).
	SSO       SSO
	SSOCreate bool
	// Preview renders the builder's preview of a form's hosted page
	// (hosted.Handler.Preview); nil shows none.
	Preview Preview
}

// linkBase is the scheme and host the console's links start with.
func (h *Handler) linkBase(r *http.Request) string {
	if h.PublicURL != "" {
		return strings.TrimSuffix(h.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil || h.IsHTTPS != nil && h.IsHTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// New makes the console on the admin API's service code.
func New(adm *admin.Handler, sessions Sessions, trustedProxies []netip.Prefix, log *slog.Logger) *Handler {
	return &Handler{adm: adm, sessions: sessions, trusted: trustedProxies, log: log}
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var templates = template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html"))

// Register adds the console's routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /admin/static/", http.StripPrefix("/admin/static/", staticHeaders(http.FileServerFS(static))))
	mux.HandleFunc("GET /admin/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/admin/forms", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /admin/login", h.loginPage)
	mux.HandleFunc("POST /admin/login", h.login)
	mux.HandleFunc("POST /admin/logout", h.logout)
	mux.HandleFunc("GET /admin/sso/start", h.ssoStart)
	mux.HandleFunc("GET "+sso.CallbackPath, h.ssoCallback)
	mux.HandleFunc("GET /admin/setup", h.setupPage)
	mux.HandleFunc("POST /admin/setup", h.setup)
	mux.HandleFunc("GET /admin/reset", h.resetPage)
	mux.HandleFunc("POST /admin/reset", h.reset)
	for _, rt := range []struct {
		pattern string
		fn      func(w http.ResponseWriter, r *http.Request, p page) error
	}{
		{"GET /admin/forms", h.forms},
		{"GET /admin/forms/{form}", h.formPage},
		{"GET /admin/forms/{form}/card", h.card},
		{"POST /admin/forms/{form}/open", h.openClose(true)},
		{"POST /admin/forms/{form}/close", h.openClose(false)},
		{"GET /admin/forms/{form}/edit", h.editPage},
		{"POST /admin/forms/{form}/edit", h.edit},
		{"GET /admin/forms/{form}/submissions", h.submissions},
		{"GET /admin/forms/{form}/entries/{id}", h.entry},
		{"POST /admin/forms/{form}/entries/{id}/{action}", h.entryAction},
		{"POST /admin/forms/{form}/review", h.reviewMany},
		{"POST /admin/forms/{form}/dead-letters/{key}/retry", h.retry},
		{"GET /admin/forms/{form}/proof", h.proof},
		{"GET /admin/forms/{form}/door", h.doorPage},
		{"POST /admin/forms/{form}/door", h.doorScan},
		{"POST /admin/forms/{form}/audit", h.startAudit},
		{"GET /admin/replay", h.replayPage},
		{"POST /admin/replay", h.startReplay},
		{"GET /admin/jobs/{id}", h.job},
		{"GET /admin/forget", h.forgetPage},
		{"POST /admin/forget", h.forget},
		{"GET /admin/accounts", h.accountsPage},
		{"POST /admin/accounts", h.addAccount},
		{"POST /admin/accounts/{id}/{action}", h.accountAction},
		{"GET /admin/account", h.myAccount},
		{"POST /admin/account/password", h.changePassword},
		{"POST /admin/account/sign-out-everywhere", h.signOutEverywhere},
		{"POST /admin/tokens", h.createToken},
		{"POST /admin/tokens/{id}/revoke", h.revokeToken},
		{"GET /admin/audit", h.auditPage},
	} {
		mux.Handle(rt.pattern, h.signedIn(rt.fn))
	}
	h.registerBuild(func(pattern string, fn func(http.ResponseWriter, *http.Request, page) error) {
		mux.Handle(pattern, h.signedIn(fn))
	})
	h.registerChannels(func(pattern string, fn func(http.ResponseWriter, *http.Request, page) error) {
		mux.Handle(pattern, h.signedIn(fn))
	})
	mux.HandleFunc("/admin/", func(w http.ResponseWriter, r *http.Request) {
		h.errorPage(w, r, page{L: pickLang(w, r)}, problem.New(problem.CodeNotFound, ""))
	})
}

func staticHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// page is what every page template gets: who is signed in, the language,
// the CSRF token for its forms, and the page's own data.
type page struct {
	L     lang
	P     accounts.Principal
	Nav   string // the menu entry that is current
	Title string
	Flash string // what the last action did
	Error string // why the last action failed
	Path  string // the request's path and query, for the language switch
	// Promoted are the entries an action promoted from the waitlist.
	Promoted []string
	Data     any
	// Backup is the last scheduled backup's failure; nil when none.
	Backup *backupNotice
}

// CSRF is the session's token for the page's forms.
func (p page) CSRF() string { return p.P.CSRFToken }

// Can says whether the signed-in principal may do action on a site; pages
// show only the buttons it may press.
func (p page) Can(action string, site string) bool {
	a := map[string]accounts.Action{"read": accounts.Read, "act": accounts.Act, "edit": accounts.EditForms,
		"forget": accounts.Forget, "manage": accounts.ManageAccounts}[action]
	return p.P.Can(a, site)
}

// CanAnywhere says whether the principal may do action on some site.
func (p page) CanAnywhere(action string) bool {
	if p.P.EverySite() {
		return p.Can(action, "")
	}
	for _, s := range p.P.Sites {
		if p.Can(action, s) {
			return true
		}
	}
	return false
}

// signedIn authenticates a console request (the session cookie), checks
// the CSRF token of a change, and renders what the handler returns: a
// page, a redirect, or an error page.
func (h *Handler) signedIn(fn func(w http.ResponseWriter, r *http.Request, p page) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
		p, err := h.sessions.Authenticate(r)
		if errors.Is(err, accounts.ErrUnauthenticated) {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/admin/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.errorPage(w, r, pg, err)
			return
		}
		if err != nil {
			h.errorPage(w, r, pg, err)
			return
		}
		pg.P = p
		// The builder's preview is the one post that changes nothing (its
		// hosted page is checked and shown again), and the hosted page's
		// form carries no CSRF token.
		if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/preview") {
			if err := h.sessions.CheckCSRF(r, p); err != nil {
				h.errorPage(w, r, pg, err)
				return
			}
		}
		q := r.URL.Query()
		pg.Flash = flashOf(q.Get("done"))
		if pr := q.Get("promoted"); pr != "" && pg.Flash != "" {
			for _, id := range strings.Split(pr, ",") {
				if entryID.MatchString(id) {
					pg.Promoted = append(pg.Promoted, id)
				}
			}
		}
		if err := fn(w, r, pg); err != nil {
			h.errorPage(w, r, pg, err)
		}
	})
}

// flashOf is the status message a page shows after an action: the code
// of ?done=, only if it is one of the console's own messages (done.* in
// strings.go). Text from the URL is never shown, so a link cannot make a
// page say what its sender likes.
func flashOf(code string) string {
	if _, ok := enStrings["done."+code]; ok && code != "promoted" {
		return code
	}
	return ""
}

// entryID is what an entry's id in a URL (?promoted=) may look like.
var entryID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// render executes a page into a buffer first, so a failure answers 500
// instead of half a page.
func (h *Handler) render(w http.ResponseWriter, status int, name string, p page) {
	var buf bytes.Buffer
	if p.P.Via != "" {
		p.Backup = h.backupNotice()
	}
	if err := templates.ExecuteTemplate(&buf, name, p); err != nil {
		h.log.Error("render console page", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Vary", "Accept-Language, Cookie")
	hdr.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; object-src 'none'; form-action 'self'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client may be gone
}

// errorPage answers an error as a page, with the problem's status.
func (h *Handler) errorPage(w http.ResponseWriter, r *http.Request, p page, err error) {
	pr := problem.From(err)
	problem.Log(h.log, r, err, pr)
	if pr.RetryAfter > 0 {
		w.Header().Set("Retry-After", itoa(pr.RetryAfter))
	}
	p.Title = p.L.T["error."+pr.Code]
	if p.Title == "" {
		p.Title = pr.Title
	}
	p.Data = map[string]any{"Status": pr.Status, "Code": pr.Code, "Detail": pr.Detail}
	h.render(w, pr.Status, "error", p)
}

// back redirects to a page of the console after an action, with what it
// did (or why it failed) for the next page to say.
func back(w http.ResponseWriter, r *http.Request, to, done string) error {
	if done != "" {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "done=" + url.QueryEscape(done)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// formOf finds the request's form for the principal and action (not
// found outside its sites, forbidden beyond its role).
func (h *Handler) formOf(r *http.Request, p page, action accounts.Action) (*form.Form, error) {
	return h.adm.Authorize(p.P, r.PathValue("form"), action)
}

func (h *Handler) clientIP(r *http.Request) string { return intake.ClientIP(r, h.trusted) }
