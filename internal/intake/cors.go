package intake

import (
	"github.com/formd/formd/internal/problem"
	"net/http"
	"net/url"
	"strings"

	"github.com/formd/formd/internal/form"
)

// checkOrigin applies the form's origins to a browser request: a request
// from an origin the form lists (or from formd's own pages) gets the CORS
// headers; a cross-origin request from anywhere else is refused with 403
// before anything is read or written. Requests without an Origin header
// (servers, curl, same-origin navigations) pass.
func (h *Handler) checkOrigin(w http.ResponseWriter, r *http.Request, f *form.Form) error {
	origin := r.Header.Get("Origin")
	if origin == "" || sameOrigin(r, origin) {
		return nil
	}
	if !f.AllowsOrigin(origin) {
		return problem.New(problem.CodeOriginNotAllowed, "this form does not accept submissions from this origin")
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Origin", origin)
	hdr.Add("Vary", "Origin")
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
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	hdr.Set("Access-Control-Allow-Headers", "Content-Type, Idempotency-Key, Prefer")
	hdr.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
