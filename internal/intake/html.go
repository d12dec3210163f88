package intake

import (
	"github.com/formd/formd/internal/problem"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/form"
)

// isHTMLPost says the request is a plain HTML form post from a browser: a
// form content type and an Accept header that asks for HTML. Such posts are
// answered with a 303 to a result page instead of JSON.
func isHTMLPost(r *http.Request) bool {
	// Accept first: API clients never ask for HTML, and it spares them the
	// media type parse on every answer.
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data"
}

// redirectHTML sends a browser to the form's thank-you page (for a success,
// when the form names one) or to the hosted result page, which shows the
// status of the key. manage, when set, is the link token of the entry
// journaled under the key (entrylink): the result page shows the
// participant's link once the entry is decided with one, and only to
// whoever holds the token, never to whoever knows only the key.
func redirectHTML(w http.ResponseWriter, r *http.Request, f *form.Form, key, manage string, success bool) {
	target := "/f/" + url.PathEscape(f.ID()) + "/done?key=" + url.QueryEscape(key)
	if manage != "" {
		target += "&manage=" + url.QueryEscape(manage)
	}
	if success && f.Def.Redirect != "" {
		target = f.Def.Redirect
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusSeeOther)
}

var htmlProblem = template.Must(template.New("p").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.P.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}li{margin:.3rem 0}</style>
</head><body>
<h1>{{.P.Title}}</h1>
{{if .P.Detail}}<p>{{.P.Detail}}</p>{{end}}
{{if .P.Errors}}<ul>{{range .P.Errors}}<li><strong>{{.Field}}</strong> {{.Message}}</li>{{end}}</ul>{{end}}
<p>Nothing was stored. Go back, correct the form and send it again.</p>
{{if .Back}}<p><a href="{{.Back}}">Back to the form</a></p>{{end}}
</body></html>
`))

// writeHTMLProblem answers a plain HTML post's error with a page a person
// can read, keeping the status code.
func writeHTMLProblem(w http.ResponseWriter, r *http.Request, p *problem.Problem) {
	problem.NoteCode(w, p.Code)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	back := ""
	if id := r.PathValue("form"); id != "" && p.Code != problem.CodeFormNotFound {
		back = "/f/" + url.PathEscape(id)
	}
	w.WriteHeader(p.Status)
	htmlProblem.Execute(w, map[string]any{"P": p, "Back": back}) //nolint:errcheck // the client may be gone
}
