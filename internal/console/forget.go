package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/problem"
)

// ---- forget a person ----

func (h *Handler) forgetPage(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("forget") {
		return accounts.ErrForbidden
	}
	p.Nav, p.Title = "forget", p.L.T["nav.forget"]
	p.Data = map[string]any{"Email": "", "Phone": "", "Region": ""}
	h.render(w, http.StatusOK, "forget", p)
	return nil
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("forget") {
		return accounts.ErrForbidden
	}
	who := erasure.Person{Email: strings.TrimSpace(r.PostFormValue("email")), Phone: strings.TrimSpace(r.PostFormValue("phone")), Region: strings.TrimSpace(r.PostFormValue("region"))}
	dry := r.PostFormValue("mode") != "erase"
	rep, err := h.adm.ForgetPerson(r.Context(), p.P, who, dry)
	p.Nav, p.Title = "forget", p.L.T["nav.forget"]
	data := map[string]any{"Email": who.Email, "Phone": who.Phone, "Region": who.Region}
	var pr *problem.Problem
	switch {
	case errors.As(err, &pr) && pr.Status < 500:
		p.Error = pr.Detail
	case err != nil:
		return err
	default:
		data["Report"], data["DryRun"] = rep, dry
	}
	p.Data = data
	h.render(w, http.StatusOK, "forget", p)
	return nil
}
