package hosted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/formd/formd/internal/intake"
)

// EntryLinks opens a participant's link (intake.Links).
type EntryLinks interface {
	View(ctx context.Context, token string) (intake.EntryView, error)
	Cancel(ctx context.Context, token string) (intake.EntryView, bool, error)
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
	f := h.forms.Get(v.Form)
	title := v.Form
	var answers []answerView
	var values map[string]any
	_ = json.Unmarshal(v.Data, &values)
	if f != nil {
		title = orDefault(f.Def.Title.For(l.Tag), f.ID())
		for _, fd := range f.Fields() {
			if val, ok := values[fd.Name]; ok {
				answers = append(answers, answerView{Label: orDefault(fd.Label.For(l.Tag), fd.Name), Value: answerText(val)})
				delete(values, fd.Name)
			}
		}
	}
	// Whatever else was kept (fields since removed from the form) is
	// shown too: the page shows every answer the entry holds.
	rest := make([]string, 0, len(values))
	for k := range values {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, k := range rest {
		answers = append(answers, answerView{Label: k, Value: answerText(values[k])})
	}
	status := l.T[v.Status]
	if status == "" {
		status = v.Status
	}
	position := ""
	if v.Position > 0 {
		position = fmt.Sprintf(l.T["position"], v.Position)
	}
	canCancel := v.Status == "stored" || v.Status == "waitlisted"
	h.render(w, f, http.StatusOK, "entry", map[string]any{
		"L": l, "Title": title, "Status": v.Status, "StatusText": status, "Position": position,
		"CanCancel": canCancel, "Token": r.PathValue("token"),
		"Answers": answers, "Receipt": v.Receipt, "ReceivedAt": v.ReceivedAt.Format("2006-01-02 15:04 MST"),
		"Ticket": ticketView(v, l),
	})
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
	l := pickLang(r)
	if h.Links == nil {
		h.notFound(w, l)
		return
	}
	token := r.PathValue("token")
	if err := r.ParseForm(); err != nil || r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
		return
	}
	if _, _, err := h.Links.Cancel(r.Context(), token); err != nil {
		h.notFound(w, l)
		return
	}
	http.Redirect(w, r, "/e/"+token, http.StatusSeeOther)
}
