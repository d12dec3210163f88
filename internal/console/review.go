package console

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// ---- review in bulk ----

// reviewedView is the result page of a bulk review: how many entries the
// editor's action approved or declined, and which it found decided
// already (by another editor, or instance) or not at all.
type reviewedView struct {
	Form     *form.Form
	Decision string // approve or decline
	Decided  int
	Already  []string
	Missing  []string
	Promoted []string
}

// reviewMany is the submissions page's bulk review: the checked entries
// (name id), or every pending entry the page showed (all=on, the page's
// ids under name page), approved or declined (decision) each through the
// admin's ReviewMany: its own transaction, decided once, audited. An
// entry someone else decided meanwhile is counted as such, not an error
// of the batch. It works without JavaScript: the page is a plain form.
func (h *Handler) reviewMany(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Act)
	if err != nil {
		return err
	}
	decision := r.PostFormValue("decision")
	if decision != "approve" && decision != "decline" {
		return problem.New(problem.CodeInvalidRequest, "decision must be approve or decline")
	}
	ids := r.PostForm["id"]
	if r.PostFormValue("all") == "on" {
		ids = append(ids, r.PostForm["page"]...)
	}
	var chosen []string
	for _, id := range ids {
		if entryID.MatchString(id) && !slices.Contains(chosen, id) {
			chosen = append(chosen, id)
		}
	}
	switch {
	case len(chosen) == 0:
		return problem.New(problem.CodeInvalidRequest, p.L.T["reviewed.none"])
	case len(chosen) > admin.MaxReview:
		return problem.New(problem.CodeInvalidRequest, fmt.Sprintf(p.L.T["reviewed.too-many"], admin.MaxReview))
	}
	var approve, decline []string
	if decision == "approve" {
		approve = chosen
	} else {
		decline = chosen
	}
	results, err := h.adm.ReviewMany(r.Context(), p.P, f, approve, decline)
	if err != nil {
		return err
	}
	v := reviewedView{Form: f, Decision: decision}
	for _, res := range results {
		switch res.Result {
		case problem.CodeEntryNotPending:
			v.Already = append(v.Already, res.ID)
		case problem.CodeEntryNotFound:
			v.Missing = append(v.Missing, res.ID)
		default:
			v.Decided++
			v.Promoted = append(v.Promoted, res.Promoted...)
		}
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "reviewed", p)
	return nil
}
