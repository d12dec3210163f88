package hosted

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/problem"
)

// EntryLinks opens a participant's link (intake.Links).
type EntryLinks interface {
	View(ctx context.Context, token string) (intake.EntryView, error)
	Cancel(ctx context.Context, token string) (intake.EntryView, bool, error)
	Change(ctx context.Context, token string, version int, values map[string]any) (intake.ChangeResult, error)
	RequestErasure(ctx context.Context, token string) (intake.Erasure, error)
}

// answerView is one answer on the participant's page.
type answerView struct{ Label, Value string }

// entry is GET /e/{token}: the participant's page, server-rendered and
// complete without JavaScript — the status in words, the waitlist
// position, the answers and the receipt. A link that opens nothing is
// the same "not found" page, whatever the reason.
func (h *Handler) entry(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	if h.Links == nil {
		h.notFound(w, l)
		return
	}
	v, err := h.Links.View(r.Context(), r.PathValue("token"))
	if err != nil {
		h.notFound(w, l)
		return
	}
	notice := ""
	switch {
	case r.URL.Query().Get("changed") == "1":
		notice = l.T["changed"]
	case r.URL.Query().Get("changed") == "0":
		notice = l.T["unchanged"]
	}
	h.renderEntry(w, r, l, v, http.StatusOK, notice, nil, nil)
}

// renderEntry draws the participant's page: the entry, and while changes
// are open the form to change it (values and errs: a failed change shown
// again with what was typed and what to fix).
func (h *Handler) renderEntry(w http.ResponseWriter, r *http.Request, l lang, v intake.EntryView, status int, notice string,
	values map[string]any, errs []form.FieldError) {
	f := h.forms.Get(v.Form)
	title := v.Form
	var answers []answerView
	var stored map[string]any
	_ = json.Unmarshal(v.Data, &stored)
	current := maps.Clone(stored)
	if f != nil {
		title = orDefault(f.Def.Title.For(l.Tag), f.ID())
		for _, fd := range f.Fields() {
			if val, ok := stored[fd.Name]; ok {
				answers = append(answers, answerView{Label: orDefault(fd.Label.For(l.Tag), fd.Name), Value: answerText(chosenLabels(fd, l, val))})
				delete(stored, fd.Name)
			}
		}
	}
	// Whatever else was kept (fields since removed from the form) is
	// shown too: the page shows every answer the entry holds.
	rest := make([]string, 0, len(stored))
	for k := range stored {
		if k == form.UploadsKey {
			continue
		}
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, k := range rest {
		answers = append(answers, answerView{Label: k, Value: answerText(stored[k])})
	}
	statusText := l.T[v.Status]
	if statusText == "" {
		statusText = v.Status
	}
	position := ""
	if v.Position > 0 {
		position = fmt.Sprintf(l.T["position"], v.Position)
	}
	live := v.Status == "stored" || v.Status == "waitlisted" || v.Status == "pending"
	canCancel := v.Status == "stored" || v.Status == "waitlisted"
	var fields []fieldView
	editUntil := ""
	if f != nil && live && v.EditUntil != nil && h.now().Before(*v.EditUntil) {
		editUntil = fmt.Sprintf(l.T["edit-until"], v.EditUntil.Format("2006-01-02 15:04 MST"))
		if values == nil {
			values = valuesOf(current)
		}
		byField := map[string]form.FieldError{}
		for _, e := range errs {
			byField[e.Field] = e
		}
		focused := false
		for _, fv := range fieldViews(f, l) {
			if fv.Type == form.TypeFile {
				continue // files are not changed from the link
			}
			fv.ID = "c-" + fv.Name
			fv.fill(values[fv.Name])
			if e, ok := byField[fv.Name]; ok {
				fv.Error = errorText(l, fv.Label, e)
				fv.Autofocus, focused = !focused, true
			}
			fields = append(fields, fv)
		}
	}
	erasure := ""
	if v.Erasure != nil {
		erasure = fmt.Sprintf(l.T["erasure-pending"], v.Erasure.RequestedAt.Format("2006-01-02 15:04 MST"))
	}
	summary := ""
	if len(errs) > 0 {
		summary = l.T["invalid"]
	}
	h.render(w, f, status, "entry", map[string]any{
		"L": l, "Title": title, "Status": v.Status, "StatusText": statusText, "Position": position,
		"CanCancel": canCancel, "Token": r.PathValue("token"), "Notice": notice, "Summary": summary,
		"Fields": fields, "Version": v.Version, "EditUntil": editUntil, "Erasure": erasure,
		"Answers": answers, "Receipt": v.Receipt, "ReceivedAt": v.ReceivedAt.Format("2006-01-02 15:04 MST"),
		"Ticket": ticketView(v, l),
	})
}

// valuesOf are an entry's stored answers as the change form shows them:
// text as written, a yes as "true", numbers in plain notation.
func valuesOf(data map[string]any) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		switch x := v.(type) {
		case bool:
			if x {
				out[k] = "true"
			}
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			out[k] = v
		}
	}
	return out
}

// answerText is an answer as the page shows it: lists joined, the rest as
// written.
func answerText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = answerText(p)
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// cancelEntry is POST /e/{token}/cancel, the page's "give my place
// back" form (a plain post, confirmed by a required checkbox): the entry
// is cancelled once, then the page is shown again.
func (h *Handler) cancelEntry(w http.ResponseWriter, r *http.Request) {
	l, token, ok := h.confirmed(w, r)
	if !ok {
		return
	}
	if _, _, err := h.Links.Cancel(r.Context(), token); err != nil {
		h.notFound(w, l)
		return
	}
	http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
}

// changeEntry is POST /e/{token}/change, the page's plain form: the
// change is made (intake.Links.Change) and the page shown again; what
// needs a fix, a full option, a version changed elsewhere or a closed
// window is said on the page, with what was typed kept.
func (h *Handler) changeEntry(w http.ResponseWriter, r *http.Request) {
	l := pickLang(r)
	if h.Links == nil {
		h.notFound(w, l)
		return
	}
	token := r.PathValue("token")
	if err := r.ParseForm(); err != nil {
		http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
		return
	}
	values := intake.FormValues(r.PostForm)
	version, _ := strconv.Atoi(r.PostForm.Get("_version"))
	delete(values, "_version")
	res, err := h.Links.Change(r.Context(), token, version, values)
	if err == nil {
		changed := "1"
		if !res.Changed {
			changed = "0"
		}
		http.Redirect(w, r, "/e/"+token+"?changed="+changed, http.StatusSeeOther)
		return
	}
	v, verr := h.Links.View(r.Context(), token)
	if verr != nil {
		h.notFound(w, l)
		return
	}
	p := problem.From(err)
	var errs []form.FieldError
	notice := ""
	switch p.Code {
	case problem.CodeValidationFailed:
		errs = p.Errors
	case problem.CodeCapacityReached:
		notice = fmt.Sprintf(l.T["change-full"], optionLabel(h.forms.Get(v.Form), l, p.Option))
	case problem.CodeEntryStale:
		notice, values = l.T["change-stale"], nil
	case problem.CodeEditClosed:
		notice = l.T["change-closed"]
	case problem.CodeDuplicateEntry:
		notice = l.T["change-duplicate"]
	case problem.CodeEntryLinkNotFound:
		h.notFound(w, l)
		return
	default:
		if p.Status >= 500 {
			h.log.Error("change from a participant's page", "err", err)
		}
		notice = l.T["change-failed"]
	}
	h.renderEntry(w, r, l, v, p.Status, notice, values, errs)
}

// optionLabel is an option's label in the page's language.
func optionLabel(f *form.Form, l lang, value string) string {
	if f != nil {
		for _, fd := range f.Fields() {
			for _, o := range fd.Options {
				if o.Value == value {
					return orDefault(o.Label.For(l.Tag), value)
				}
			}
		}
	}
	return value
}

// eraseEntry is POST /e/{token}/erasure, the page's "erase my data" form
// (confirmed by a required checkbox): the request is recorded; when the
// form erases at once (self_erase), the page says the data is erased —
// the link opens nothing any more.
func (h *Handler) eraseEntry(w http.ResponseWriter, r *http.Request) {
	l, token, ok := h.confirmed(w, r)
	if !ok {
		return
	}
	e, err := h.Links.RequestErasure(r.Context(), token)
	if err != nil {
		if problem.From(err).Status >= 500 {
			h.log.Error("erasure request from a participant's page", "err", err)
		}
		h.notFound(w, l)
		return
	}
	if e.State != "done" {
		http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
		return
	}
	h.render(w, nil, http.StatusOK, "erased", map[string]any{"L": l})
}

// confirmed reads a confirmed form of the page (its required checkbox
// confirm=yes): false when it answered already — the link opens nothing
// here, or the box was not ticked (the page again, nothing done).
func (h *Handler) confirmed(w http.ResponseWriter, r *http.Request) (lang, string, bool) {
	l := pickLang(r)
	if h.Links == nil {
		h.notFound(w, l)
		return l, "", false
	}
	token := r.PathValue("token")
	if err := r.ParseForm(); err != nil || r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
		return l, token, false
	}
	return l, token, true
}

// chosenLabels are a choice field's answers as their options' labels in
// the page's language (the value where an option has none).
func chosenLabels(fd form.Field, l lang, val any) any {
	if len(fd.Options) == 0 {
		return val
	}
	label := func(v any) any {
		s, ok := v.(string)
		if !ok {
			return v
		}
		for _, o := range fd.Options {
			if o.Value == s {
				return orDefault(o.Label.For(l.Tag), s)
			}
		}
		return s
	}
	if list, ok := val.([]any); ok {
		out := make([]any, len(list))
		for i, v := range list {
			out[i] = label(v)
		}
		return out
	}
	return label(val)
}
