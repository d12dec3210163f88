package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ---- forms ----

// formsView is the forms page: the forms' cards (archived ones only when
// asked for), and the drafts of new forms.
type formsView struct {
	Cards        []card
	Drafts       []store.FormDraft
	Archived     int
	ShowArchived bool
}

func (h *Handler) forms(w http.ResponseWriter, r *http.Request, p page) error {
	archives, err := h.adm.Store.Archives(r.Context())
	if err != nil {
		return err
	}
	v := formsView{ShowArchived: r.URL.Query().Get("archived") == "1"}
	for _, f := range h.adm.VisibleForms(p.P) {
		if _, archived := archives[f.ID()]; archived {
			v.Archived++
			if !v.ShowArchived {
				continue
			}
		}
		c, err := h.cardOf(r, f)
		if err != nil {
			return err
		}
		_, c.Archived = archives[f.ID()]
		v.Cards = append(v.Cards, c)
	}
	if v.Drafts, err = h.adm.Drafts(r.Context(), p.P); err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "forms", p.L.T["nav.forms"], v
	h.render(w, http.StatusOK, "forms", p)
	return nil
}

// card is a form's live numbers and chart, as a card of the forms page
// (refreshed alone by the script).
type card struct {
	admin.FormStats
	Chart admin.Chart
	// Opening says the chart is the hour of the opening.
	Now time.Time
	// Archived says the form is archived.
	Archived bool
}

func (h *Handler) cardOf(r *http.Request, f *form.Form) (card, error) {
	st, err := h.adm.Stats(r.Context(), f)
	if err != nil {
		return card{}, err
	}
	since, until, opening := h.adm.ChartWindow(f)
	ch, err := h.adm.Chart(r.Context(), f, since, until)
	if err != nil {
		return card{}, err
	}
	ch.Opening = opening
	return card{FormStats: st, Chart: ch, Now: time.Now()}, nil
}

// formCard finds the form the request names, if the account may read it,
// and its card: what the form's page and its refreshed card show.
func (h *Handler) formCard(r *http.Request, p page) (*form.Form, card, error) {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return nil, card{}, err
	}
	c, err := h.cardOf(r, f)
	return f, c, err
}

func (h *Handler) card(w http.ResponseWriter, r *http.Request, p page) error {
	_, c, err := h.formCard(r, p)
	if err != nil {
		return err
	}
	p.Data = map[string]any{"C": c, "Link": r.URL.Query().Get("link") != "0"}
	h.render(w, http.StatusOK, "card-fragment", p)
	return nil
}

func (h *Handler) formPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, c, err := h.formCard(r, p)
	if err != nil {
		return err
	}
	archives, err := h.adm.Store.Archives(r.Context())
	if err != nil {
		return err
	}
	_, c.Archived = archives[f.ID()]
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), c
	h.render(w, http.StatusOK, "form", p)
	return nil
}

func title(f *form.Form, l lang) string {
	if t := f.Def.Title.For(l.Tag); t != "" {
		return t
	}
	return f.ID()
}

func (h *Handler) openClose(open bool) func(w http.ResponseWriter, r *http.Request, p page) error {
	return func(w http.ResponseWriter, r *http.Request, p page) error {
		f, err := h.formOf(r, p, accounts.Act)
		if err != nil {
			return err
		}
		if err := h.adm.SetOpen(r.Context(), p.P, f, open); err != nil {
			return err
		}
		done := "closed"
		if open {
			done = "opened"
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(f.ID()), done)
	}
}

func (h *Handler) editPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Data = map[string]any{"Form": f, "Source": string(admin.DefinitionFor(p.P, f))}
	h.render(w, http.StatusOK, "edit", p)
	return nil
}

// edit applies the YAML of the form's editor; a definition that does not
// check comes back with every problem next to the text, nothing applied.
func (h *Handler) edit(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	src := r.PostFormValue("definition")
	var problems []form.Problem
	restored, err := h.adm.RestoreSecrets(p.P, []byte(src))
	if err != nil {
		problems = []form.Problem{{Msg: problem.From(err).Detail}}
		restored = []byte(src)
	}
	forms, err := form.Parse(restored, "")
	var de *form.DefinitionError
	switch {
	case problems != nil:
	case errors.As(err, &de):
		problems = de.Problems
	case err != nil:
		return err
	case len(forms) != 1 || forms[0].ID() != f.ID():
		problems = []form.Problem{{Msg: fmt.Sprintf(p.L.T["edit.one-form"], f.ID())}}
	}
	if problems == nil {
		if shown, err := h.confirmChange(w, r, p, f, restored, src); shown || err != nil {
			return err
		}
		// The organizer has confirmed the change on this page (or it
		// needs none): the admin path's token says so.
		if _, err := h.adm.ApplyForms(r.Context(), p.P, restored, admin.ConfirmToken(restored)); err != nil {
			return err
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(f.ID()), "saved")
	}
	for i := range problems {
		problems[i].Msg = definitionProblem(p.L, problems[i].Msg)
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Error = p.L.T["edit.invalid"]
	p.Data = map[string]any{"Form": f, "Source": src, "Problems": problems}
	h.render(w, http.StatusUnprocessableEntity, "edit", p)
	return nil
}
