package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	// Versions are the answers the participant's changes replaced,
	// oldest first; Erasure is their pending erasure request.
	Versions []entryVersion
	Erasure  *store.ErasureRequest
}

// entryVersion is one earlier version of the answers, as the page shows
// it.
type entryVersion struct {
	Version    int
	ReplacedAt time.Time
	Fields     []fieldValue
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
	if err := h.participantSide(r, f, p, &v); err != nil {
		return err
	}
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
	case "erase":
		// A participant's erasure request granted: the path formd forget
		// takes, for one entry.
		if !p.P.Can(accounts.Forget, f.Def.Site) {
			return problem.New(problem.CodeForbidden, "erasing needs the forget permission on this site")
		}
		_, err = h.adm.EraseEntry(r.Context(), p.P, f, id)
		done = "erased"
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

// participantSide adds what the participant did to the entry page: the
// versions their changes replaced, and their pending erasure request.
func (h *Handler) participantSide(r *http.Request, f *form.Form, p page, v *entryView) error {
	vs, err := h.adm.Store.Versions(r.Context(), f.ID(), v.Entry.ID)
	if err != nil {
		return err
	}
	for i := len(vs) - 1; i >= 0; i-- { // newest first, as the history reads
		ver := vs[i]
		vals := rowValues(store.Row{Data: ver.Data})
		ev := entryVersion{Version: ver.Version, ReplacedAt: ver.ReplacedAt}
		for _, fd := range f.Fields() {
			if val, ok := vals[fd.Name]; ok {
				ev.Fields = append(ev.Fields, fieldValue{orLabel(fd.Label.For(p.L.Tag), fd.Name), val})
			}
		}
		v.Versions = append(v.Versions, ev)
	}
	reqs, err := h.adm.PendingErasures(r.Context(), p.P, f.ID())
	if err != nil {
		return err
	}
	for _, e := range reqs {
		if e.EntryID == v.Entry.ID {
			v.Erasure = &e
		}
	}
	return nil
}

func orLabel(label, name string) string {
	if label == "" {
		return name
	}
	return label
}
