// Package hosted serves the pages formd renders itself: the hosted form at
// /f/{form}, the result page a plain HTML post is redirected to, and the
// browser SDK at /sdk/formd.js.
//
// The hosted form is rendered from the form definition with html/template
// and works without JavaScript: every page view carries a fresh _key, so a
// plain post lands once however often it is re-sent. With JavaScript, the
// SDK takes over the same form (progressive enhancement through
// data-formd) and adds the durable outbox, retries and live states. Pages
// speak English or Simplified Chinese, chosen by Accept-Language.
package hosted

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/store"
	"github.com/google/uuid"
)

// Forms finds a form by id.
type Forms interface {
	Get(id string) *form.Form
}

// Places says how many places a form has taken (store.PlacesCache), so the
// page can say whether places remain.
type Places interface {
	Places(ctx context.Context, form string) (store.Capacity, bool)
}

// Statuses reports the public status of a key, as the status endpoint
// shows it (intake.Statuses).
type Statuses interface {
	Status(ctx context.Context, form, key string) (status string, found bool, err error)
}

// Outcomes reads the decision of a key (store.Store), for the result
// page's participant's link.
type Outcomes interface {
	Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error)
}

// Handler serves the hosted pages and the SDK.
type Handler struct {
	// Links, if set, opens participants' links for /e/{token}
	// (entry.go); without it every link is "not found".
	Links EntryLinks
	// MailDrafts says the server sends e-mail (--smtp): a form with
	// drafts and an e-mail field then offers "E-mail me this link".
	MailDrafts bool

	// Outcomes and Hasher, if set, let the result page show the
	// participant's link (done); PublicURL (--public-url) makes it
	// absolute.
	Outcomes  Outcomes
	Hasher    *form.Hasher
	PublicURL string
	forms     Forms
	places    Places
	status    Statuses
	now       func() time.Time
	log       *slog.Logger
	// sdkFiles are the SDK's modules by file name; sdkVersion is
	// formd.js's, for the page's script URL.
	sdkFiles   map[string]sdkFile
	sdkVersion string
}

// New makes the handler. places may be nil: the page then says nothing
// about places left.
func New(forms Forms, places Places, status Statuses, now func() time.Time, log *slog.Logger) *Handler {
	files := sdkFiles()
	h := &Handler{forms: forms, status: status, now: now, log: log, sdkFiles: files, sdkVersion: files["formd.js"].version}
	if places != nil {
		h.places = places
	}
	return h
}

// Register adds the routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /f/{form}", h.page)
	mux.HandleFunc("GET /f/{form}/done", h.done)
	mux.HandleFunc("GET /e/{token}", h.entry)
	mux.HandleFunc("POST /e/{token}/cancel", h.cancelEntry)
	mux.HandleFunc("POST /e/{token}/change", h.changeEntry)
	mux.HandleFunc("POST /e/{token}/erasure", h.eraseEntry)
	mux.HandleFunc("GET /sdk/{file}", h.serveSDK)
	mux.HandleFunc("GET "+altchaPrefix+"{file}", h.serveAltcha)
}

//go:embed templates/page.html templates/ticket.html
var templateFS embed.FS

var templates = template.Must(template.New("").ParseFS(templateFS, "templates/page.html", "templates/ticket.html"))

// pageHeaders are set on every HTML page. The CSP allows only formd's own
// script (the SDK) and inline styles; it leaves form-action open because
// a form's thank-you redirect may go to the owner's site. A page may be
// framed only by formd itself and the form's own origins (where the owner
// embeds it), so no other site can dress it up to trick a person into
// submitting (clickjacking).
func pageHeaders(w http.ResponseWriter, f *form.Form) {
	hdr := w.Header()
	ancestors := "'self'"
	if f != nil {
		for _, o := range f.Def.Origins {
			ancestors += " " + o
		}
	}
	if ancestors == "'self'" {
		hdr.Set("X-Frame-Options", "SAMEORIGIN") // for browsers before CSP 2
	}
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	// Every view gets its own _key, and status pages change.
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Vary", "Accept-Language")
	hdr.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; object-src 'none'; frame-ancestors "+ancestors)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
}

// render executes a template into a buffer first, so a failure answers 500
// instead of half a page.
func (h *Handler) render(w http.ResponseWriter, f *form.Form, status int, name string, data any) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		h.log.Error("render hosted page", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	pageHeaders(w, f)
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client may be gone
}

func (h *Handler) notFound(w http.ResponseWriter, l lang) {
	h.render(w, nil, http.StatusNotFound, "missing", map[string]any{"L": l})
}

// page is GET /f/{form}: the form, or why it cannot be filled in now.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		h.notFound(w, l)
		return
	}
	h.render(w, f, http.StatusOK, "page", h.view(r, f, l))
}

// view builds the page for f: a fresh key, places left, or a notice when
// the form cannot be filled in now.
func (h *Handler) view(r *http.Request, f *form.Form, l lang) pageView {
	now := h.now()
	v := pageView{
		L:           l,
		ID:          f.ID(),
		Title:       orDefault(f.Def.Title.For(l.Tag), f.ID()),
		Description: f.Def.Description.For(l.Tag),
		Action:      "/v1/forms/" + url.PathEscape(f.ID()) + "/submissions",
		Redirect:    f.Def.Redirect,
		SDK:         "/sdk/formd.js?v=" + h.sdkVersion,
		ShowForm:    true,
		Key:         uuid.Must(uuid.NewV7()).String(),
		Shown:       strconv.FormatInt(now.UnixMilli(), 10),
		Fields:      fieldViews(f, l),
		Msgs:        messages(l),
		Challenge:   challengeFor(f, l),
		Conditions:  conditionsOf(f),
	}
	if v.Conditions != "" {
		v.ConditionsJS = "/sdk/conditions.js?v=" + h.sdkFiles["conditions.js"].version
	}
	v.layout(f, l, r.URL.Query())
	if f.Def.Drafts {
		v.DraftsJS = "/sdk/drafts.js?v=" + h.sdkFiles["drafts.js"].version
		v.DraftMsgs = draftMessages(l)
		for _, fd := range f.Fields() {
			if h.MailDrafts && fd.Type == form.TypeEmail {
				v.DraftMail = draftMailMessages(l)
			}
		}
	}
	if len(f.Def.Pages) > 1 {
		v.StepsJS = "/sdk/steps.js?v=" + h.sdkFiles["steps.js"].version
	}
	for _, fd := range f.Fields() {
		v.Multipart = v.Multipart || fd.Type == form.TypeFile
	}
	if f.Def.Spam != nil {
		v.Honeypot = f.Def.Spam.Honeypot
	}
	switch {
	case !f.OpenAt(now):
		v.ShowForm = false
		v.Notice = l.T["closed"]
		if d := f.Def.OpensAt; d != nil && now.Before(*d) {
			v.Notice += " " + fmt.Sprintf(l.T["opens"], d.Format("2006-01-02 15:04 (UTC-07:00)"))
		} else if d := f.Def.ClosesAt; d != nil {
			v.Notice += " " + fmt.Sprintf(l.T["closed-at"], d.Format("2006-01-02 15:04 (UTC-07:00)"))
		}
	case f.Def.Capacity != nil && h.places != nil:
		c, known := h.places.Places(r.Context(), f.ID())
		if !known {
			break
		}
		left := max(*f.Def.Capacity-c.Taken, 0)
		switch {
		case left == 0 && f.Def.WhenFull == form.WhenFullWaitlist:
			v.Places = l.T["full-wait"]
		case left == 0:
			v.ShowForm = false
			v.Notice = l.T["full"]
		case left == 1:
			v.Places = l.T["left-one"]
		default:
			v.Places = fmt.Sprintf(l.T["left"], left)
		}
	}
	if v.ShowForm && h.places != nil {
		h.optionPlaces(r, f, l, &v)
	}
	return v
}

// optionPlaces marks the full options of the select field whose options
// have places of their own: "full — waitlist" beside a full session of a
// form that waitlists; "full", and not to be chosen, on one that turns
// people away. Only a display (the store's count, a moment old): the
// store decides.
func (h *Handler) optionPlaces(r *http.Request, f *form.Form, l lang, v *pageView) {
	field, opts := f.PlaceField()
	if field == "" {
		return
	}
	c, known := h.places.Places(r.Context(), f.ID())
	if !known {
		return
	}
	full := map[string]bool{}
	for _, o := range opts {
		if o.Capacity != nil && c.Options[o.Value].Taken >= *o.Capacity {
			full[o.Value] = true
		}
	}
	waitlist := f.Def.WhenFull == form.WhenFullWaitlist
	for i := range v.Fields {
		if v.Fields[i].Name != field {
			continue
		}
		for j := range v.Fields[i].Options {
			o := &v.Fields[i].Options[j]
			switch {
			case !full[o.Value]:
			case waitlist:
				o.Label = fmt.Sprintf(l.T["option-full-wait"], o.Label)
			default:
				o.Label = fmt.Sprintf(l.T["option-full"], o.Label)
				o.Disabled = true
			}
		}
	}
}

// FormErrors answers a plain HTML post that failed validation: the form
// again, in the person's language, with what they typed kept and each
// error next to its field, so nothing has to be typed twice. The key of
// the failed post is kept: nothing was recorded under it.
func (h *Handler) FormErrors(w http.ResponseWriter, r *http.Request, f *form.Form, values map[string]any, key string, errs []form.FieldError) {
	l := pickLang(r)
	v := h.view(r, f, l)
	v.ShowForm, v.Notice = true, ""
	if key != "" {
		v.Key = key
	}
	v.Summary = l.T["invalid"]
	for i := range v.Hidden {
		if s, ok := values[v.Hidden[i].Name].(string); ok {
			v.Hidden[i].Value = s
		}
	}
	v.fill(l, values, errs)
	h.render(w, f, http.StatusUnprocessableEntity, "page", v)
}

// fill puts what was typed back into the page's fields, each error next
// to its field, and the focus on the first field in error.
func (v *pageView) fill(l lang, values map[string]any, errs []form.FieldError) {
	byField := map[string]form.FieldError{}
	for _, e := range errs {
		byField[e.Field] = e
	}
	focused := false
	for i := range v.Fields {
		fv := &v.Fields[i]
		fv.fill(values[fv.Name])
		if e, ok := byField[fv.Name]; ok {
			fv.Error = errorText(l, fv.Label, e)
			fv.Autofocus, focused = !focused, true
		}
	}
}

// done is GET /f/{form}/done?key=K, where a plain HTML post lands: the
// status of the key, never the data. While the outcome is pending the page
// refreshes itself.
func (h *Handler) done(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		h.notFound(w, l)
		return
	}
	key := r.URL.Query().Get("key")
	status := "unknown"
	if key != "" {
		st, found, err := h.status.Status(r.Context(), f.ID(), key)
		switch {
		case err != nil:
			// The journal or store did not answer; what was posted was
			// acknowledged only if it was durable, so "being processed"
			// is the honest answer, and the page retries.
			h.log.Warn("hosted result page: status", "form", f.ID(), "err", err)
			status = "processing"
		case found:
			status = st
		}
	}
	msg, ok := l.T[status]
	if !ok {
		msg = l.T["processing"]
	}
	h.render(w, f, http.StatusOK, "done", map[string]any{
		"L": l, "Title": orDefault(f.Def.Title.For(l.Tag), f.ID()), "Status": status, "State": resultState(status),
		"Message": msg, "Refresh": status == "processing", "Back": "/f/" + url.PathEscape(f.ID()),
		"Manage": h.manageLink(r, f.ID(), key),
	})
}

// manageLink is the participant's link the result page shows: the one
// the key's first answer carries (intake.ManageLink), and only to a
// visitor whose address holds its token (manage=, which the plain post's
// redirect gave the person who sent it), never to one who knows only the
// key. "" while the entry is undecided, and for every other visitor.
func (h *Handler) manageLink(r *http.Request, formID, key string) string {
	token := r.URL.Query().Get("manage")
	if token == "" || key == "" || h.Outcomes == nil || h.Hasher == nil {
		return ""
	}
	o, ok, err := h.Outcomes.Outcome(r.Context(), formID, key)
	if err != nil {
		h.log.Warn("hosted result page: outcome", "form", formID, "err", err)
		return ""
	}
	link := intake.ManageLink(h.Hasher, o)
	if !ok || link == "" || link != entrylink.PagePath(token) {
		return ""
	}
	return strings.TrimRight(h.PublicURL, "/") + link
}

// resultState maps a status to the SDK's state names, so the result page
// and the enhanced form style alike.
func resultState(status string) string {
	switch status {
	case "stored", "cancelled", "pending":
		return "received"
	case "waitlisted", "duplicate":
		return status
	case "rejected":
		return "full"
	case "processing":
		return "sending"
	}
	return "failed"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
