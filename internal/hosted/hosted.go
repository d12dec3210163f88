// Package hosted serves the pages formd renders itself: the hosted form at
// /f/{form}, which works without JavaScript (a fresh _key in every page, so
// a plain post lands once), and the result page a plain post is redirected
// to.
package hosted

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/google/uuid"
)

// Forms finds a form by id.
type Forms interface {
	Get(id string) *form.Form
}

// StatusFunc reports the public status of a key (intake.Handler.Status).
type StatusFunc func(ctx context.Context, form, key string) (status string, found bool, err error)

// Handler serves the hosted pages.
type Handler struct {
	forms  Forms
	status StatusFunc
	now    func() time.Time
	log    *slog.Logger
}

// New makes the handler.
func New(forms Forms, status StatusFunc, now func() time.Time, log *slog.Logger) *Handler {
	return &Handler{forms: forms, status: status, now: now, log: log}
}

// Register adds the routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /f/{form}", h.page)
	mux.HandleFunc("GET /f/{form}/done", h.done)
}

type fieldView struct {
	form.Field
	Label   string
	Input   string // the input type for simple inputs
	Options []optionView
}

type optionView struct{ Value, Label string }

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		http.Error(w, "form not found", http.StatusNotFound)
		return
	}
	lang := language(r)
	var fields []fieldView
	for _, fd := range f.Fields() {
		v := fieldView{Field: fd, Label: fd.Label.For(lang)}
		if v.Label == "" {
			v.Label = fd.Name
		}
		switch fd.Type {
		case form.TypeEmail:
			v.Input = "email"
		case form.TypePhone:
			v.Input = "tel"
		case form.TypeNumber:
			v.Input = "number"
		case form.TypeDate:
			v.Input = "date"
		default:
			v.Input = "text"
		}
		for _, o := range fd.Options {
			l := o.Label.For(lang)
			if l == "" {
				l = o.Value
			}
			v.Options = append(v.Options, optionView{Value: o.Value, Label: l})
		}
		fields = append(fields, v)
	}
	title := f.Def.Title.For(lang)
	if title == "" {
		title = f.ID()
	}
	honeypot := ""
	if f.Def.Spam != nil {
		honeypot = f.Def.Spam.Honeypot
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store") // every page view gets its own key
	err := pageTmpl.Execute(w, map[string]any{
		"ID": f.ID(), "Title": title, "Fields": fields, "Open": f.OpenAt(h.now()),
		"Key": uuid.Must(uuid.NewV7()).String(), "Shown": strconv.FormatInt(h.now().UnixMilli(), 10),
		"Honeypot": honeypot, "T": strings_(lang),
	})
	if err != nil {
		h.log.Warn("render hosted page", "err", err)
	}
}

func (h *Handler) done(w http.ResponseWriter, r *http.Request) {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		http.Error(w, "form not found", http.StatusNotFound)
		return
	}
	lang := language(r)
	key := r.URL.Query().Get("key")
	status, found, err := h.status(r.Context(), f.ID(), key)
	if err != nil {
		h.log.Warn("hosted result page: status", "err", err)
		status = "processing"
	} else if !found {
		status = "unknown"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := doneTmpl.Execute(w, map[string]any{"ID": f.ID(), "Status": status, "T": strings_(lang)}); err != nil {
		h.log.Warn("render result page", "err", err)
	}
}

// language picks zh for a Chinese Accept-Language, else en.
func language(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		if strings.HasPrefix(tag, "zh") {
			return "zh"
		}
		if strings.HasPrefix(tag, "en") {
			return "en"
		}
	}
	return "en"
}

func strings_(lang string) map[string]string {
	if lang == "zh" {
		return zh
	}
	return en
}

var en = map[string]string{
	"lang": "en", "submit": "Submit", "closed": "This form is not taking submissions now.",
	"stored": "Received. Thank you!", "waitlisted": "Received: you are on the waitlist.",
	"processing": "Received: it is being processed.", "duplicate": "You are already registered.",
	"rejected": "Sorry, the form is full.", "cancelled": "This registration was cancelled.",
	"unknown": "We have no record of this submission. Please send the form again.", "back": "Back to the form",
	"required": "required",
}

var zh = map[string]string{
	"lang": "zh-CN", "submit": "提交", "closed": "此表单当前不接受提交。",
	"stored": "已收到，谢谢！", "waitlisted": "已收到：您在候补名单中。",
	"processing": "已收到，正在处理。", "duplicate": "您已报名。",
	"rejected": "抱歉，名额已满。", "cancelled": "此报名已取消。",
	"unknown": "没有找到这次提交的记录，请重新提交表单。", "back": "返回表单",
	"required": "必填",
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="{{.T.lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:1rem auto;padding:0 1rem;color:#222}
label{display:block;margin-top:1rem;font-weight:600}input,select,textarea{width:100%;font:inherit;padding:.5rem;box-sizing:border-box}
input[type=checkbox]{width:auto}button{margin-top:1.5rem;font:inherit;padding:.7rem 1.5rem}.hp{position:absolute;left:-9999px}</style>
</head><body>
<h1>{{.Title}}</h1>
{{if not .Open}}<p role="status">{{.T.closed}}</p>{{else}}
<form method="post" action="/v1/forms/{{.ID}}/submissions" data-formd="{{.ID}}">
<input type="hidden" name="_key" value="{{.Key}}"><input type="hidden" name="_ts" value="{{.Shown}}">
{{if .Honeypot}}<div class="hp" aria-hidden="true"><input type="text" name="{{.Honeypot}}" tabindex="-1" autocomplete="off"></div>{{end}}
{{range .Fields}}
{{if eq .Type "checkbox"}}<label><input type="checkbox" name="{{.Name}}" value="true"{{if .Required}} required{{end}}> {{.Label}}</label>
{{else}}<label for="f-{{.Name}}">{{.Label}}{{if .Required}} *{{end}}</label>
{{if eq .Type "textarea"}}<textarea id="f-{{.Name}}" name="{{.Name}}"{{if .Required}} required{{end}}></textarea>
{{else if eq .Type "select"}}<select id="f-{{.Name}}" name="{{.Name}}"{{if .Required}} required{{end}}><option value=""></option>{{range .Options}}<option value="{{.Value}}">{{.Label}}</option>{{end}}</select>
{{else if eq .Type "multiselect"}}<select id="f-{{.Name}}" name="{{.Name}}" multiple{{if .Required}} required{{end}}>{{range .Options}}<option value="{{.Value}}">{{.Label}}</option>{{end}}</select>
{{else}}<input id="f-{{.Name}}" name="{{.Name}}" type="{{.Input}}"{{if .Required}} required{{end}}>{{end}}
{{end}}{{end}}
<button type="submit">{{.T.submit}}</button>
</form>{{end}}
</body></html>
`))

var doneTmpl = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="{{.T.lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{index .T .Status}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}</style>
</head><body>
<p role="status" data-status="{{.Status}}">{{index .T .Status}}</p>
<p><a href="/f/{{.ID}}">{{.T.back}}</a></p>
</body></html>
`))
