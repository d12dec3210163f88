package intake

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// checkOrigin applies the form's origins to a browser request: a request
// from an origin the form lists (or from formd's own pages) gets the CORS
// headers; a cross-origin request from anywhere else is refused with 403
// before anything is read or written. Requests without an Origin header
// (servers, curl, same-origin navigations) pass.
//
// The refusal itself carries Access-Control-Allow-Origin (issue 34): a
// page the form does not list can read the 403 origin-not-allowed and say
// "this site may not send to this form" instead of seeing a network error
// and retrying forever. Nothing else is readable that way: every endpoint
// calls checkOrigin before it reads the store, so the only body such a
// page ever reads is the problem document.
func (h *Handler) checkOrigin(w http.ResponseWriter, r *http.Request, f *form.Form) error {
	origin := r.Header.Get("Origin")
	if origin == "" || sameOrigin(r, origin) {
		return nil
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
	if !f.AllowsOrigin(origin) {
		return problem.New(problem.CodeOriginNotAllowed, "this form does not accept submissions from this origin")
	}
	hdr.Set("Access-Control-Expose-Headers", "Location, Retry-After, Idempotent-Replayed, Preference-Applied, Idempotency-Key, Formd-Key-Derived")
	return nil
}

// sameOrigin says the Origin is this server, as seen in the Host header:
// the hosted form page posting to its own server.
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// preflight answers CORS preflight requests for the form's endpoints.
func (h *Handler) preflight(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	// A preflight from an origin the form does not list is answered as
	// any other, so that the browser sends the request and the page can
	// read its 403 origin-not-allowed (checkOrigin refuses it before the
	// body is read).
	if err := h.checkOrigin(w, r, f); err != nil && problem.From(err).Code != problem.CodeOriginNotAllowed {
		return err
	}
	return preflightAnswer(w, "GET, POST, OPTIONS", "Content-Type, Idempotency-Key, Prefer")
}

// entryOrigin applies the origins of the form a participant's link names
// (its token, checked without reading the store) to a browser request on
// /v1/entries/{token}, as checkOrigin does for a form's endpoints: a
// page on a listed origin (the SDK on the organizer's site) may read the
// answer and its version (ETag); any other cross-origin request is
// refused with 403 before anything is read or written. A token that
// names no form this installation serves is the one 404 every link that
// opens nothing gets, readable by the page: it tells nothing more.
func (h *Handler) entryOrigin(w http.ResponseWriter, r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" || sameOrigin(r, origin) {
		return nil
	}
	var f *form.Form
	if formID, _, ok := entrylink.Parse(h.cfg.Hasher, r.PathValue("token")); ok {
		f = h.forms.Get(formID)
	}
	if f == nil {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
		return linkNotFound()
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	w.Header().Set("Access-Control-Expose-Headers", "ETag, Formd-Changed, Idempotent-Replayed")
	return nil
}

// entryPreflight answers CORS preflight requests for a participant's
// link (/v1/entries/{token}: GET, PATCH with If-Match, cancel, erasure).
// Like a form's preflight it is answered for any origin and any token,
// without reading the store, so that the browser sends the request and
// the page can read its 403 origin-not-allowed or 404: the preflight
// itself tells nothing.
func (h *Handler) entryPreflight(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Participants == nil {
		return linkNotFound()
	}
	if err := h.entryOrigin(w, r); err != nil {
		if c := problem.From(err).Code; c != problem.CodeOriginNotAllowed && c != problem.CodeEntryLinkNotFound {
			return err
		}
	}
	return preflightAnswer(w, "GET, PATCH, POST, OPTIONS", "Content-Type, If-Match")
}

// preflightAnswer is a CORS preflight's answer: the methods and the
// request headers a route takes, for ten minutes.
func preflightAnswer(w http.ResponseWriter, methods, headers string) error {
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Methods", methods)
	hdr.Set("Access-Control-Allow-Headers", headers)
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
