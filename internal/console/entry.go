package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ---- one entry ----

type entryView struct {
	Form    *form.Form
	Entry   admin.EntryView
	Fields  []fieldValue
	Journal *journal.Entry
	// JournalUnknown says the journal did not answer the lookup.
	JournalUnknown bool
	Promote        bool
	// Files are the entry's files (files.go).
	Files []entryFile
}

type fieldValue struct{ Label, Value string }

func (h *Handler) entry(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	e, err := h.adm.Entry(r.Context(), f, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := entryView{Form: f, Entry: e}
	vals := rowValues(e.Row)
	for _, fd := range f.Fields() {
		label := fd.Label.For(p.L.Tag)
		if label == "" {
			label = fd.Name
		}
		v.Fields = append(v.Fields, fieldValue{label, vals[fd.Name]})
		delete(vals, fd.Name)
	}
	v.Fields = append(v.Fields, otherValues(f, e.Row, vals, p.L.Tag)...)
	// A journal that does not answer is said so, never taken for one that
	// no longer holds the entry.
	switch je, ok, err := h.adm.Journal.Lookup(r.Context(), f.ID(), e.Key); {
	case err != nil:
		h.log.Warn("console entry page: journal lookup", "form", f.ID(), "entry", e.ID, "err", err)
		v.JournalUnknown = true
	case ok:
		v.Journal = &je
	}
	if v.Files, err = h.entryFiles(r.Context(), f, e, p.L.Tag); err != nil {
		return err
	}
	withFileNames(f, v.Fields, v.Files)
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "entry", p)
	return nil
}

// entryAction is the entry page's buttons: cancel, approve, decline,
// spam, not-spam, redeliver.
func (h *Handler) entryAction(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Act)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	to := "/admin/forms/" + url.PathEscape(f.ID()) + "/entries/" + url.PathEscape(id)
	var promoted []string
	done := r.PathValue("action")
	switch done {
	case "cancel":
		promoted, err = h.adm.Cancel(r.Context(), p.P, f, id)
		done = "cancelled"
	case "approve", "decline":
		promoted, err = h.adm.Review(r.Context(), p.P, f, id, done == "approve")
		done += "d"
	case "spam":
		promoted, err = h.adm.MarkSpam(r.Context(), p.P, f, id)
		done = "marked-spam"
	case "not-spam":
		var o store.Outcome
		o, err = h.adm.NotSpam(r.Context(), p.P, f, id)
		done = "not-spam-" + o.Status
	case "redeliver":
		seq, perr := strconv.ParseUint(r.PostFormValue("event"), 10, 64)
		if perr != nil {
			return problem.New(problem.CodeInvalidRequest, "event must be the number of one of the entry's events")
		}
		err = h.adm.Redeliver(r.Context(), p.P, f, id, seq, r.PostFormValue("endpoint"))
		done = "redelivering"
	default:
		return problem.New(problem.CodeNotFound, "")
	}
	if err != nil {
		return err
	}
	if len(promoted) > 0 {
		to += "?promoted=" + url.QueryEscape(strings.Join(promoted, ","))
	}
	return back(w, r, to, done)
}

func (h *Handler) retry(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Act)
	if err != nil {
		return err
	}
	if err := h.adm.RetryDeadLetter(r.Context(), p.P, f, r.PathValue("key")); err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(f.ID())+"/proof", "retried")
}
