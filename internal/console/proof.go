package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// ---- proof, audit, replay ----

type proofView struct {
	Form    *form.Form
	Proof   admin.Proof
	Rate    float64
	Started int64
	Reached int64
	RateOK  bool
	Jobs    []admin.Job
	Now     time.Time
}

func (h *Handler) proof(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	until := time.Now().UTC()
	pr, err := h.adm.ProofOf(r.Context(), f, until.Add(-admin.ProofWindow), until)
	if err != nil {
		return err
	}
	v := proofView{Form: f, Proof: pr, Jobs: h.adm.Jobs(p.P, f.ID()), Now: time.Now()}
	v.Rate, v.Started, v.Reached, v.RateOK = pr.ArrivalRate()
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "proof", p)
	return nil
}

func (h *Handler) startAudit(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	j, err := h.adm.StartAudit(p.P, journal.Filter{Form: f.ID()})
	if err != nil {
		return err
	}
	return back(w, r, "/admin/jobs/"+j.ID, "")
}

func (h *Handler) replayPage(w http.ResponseWriter, r *http.Request, p page) error {
	var forms []*form.Form
	for _, f := range h.adm.VisibleForms(p.P) {
		if p.P.Can(accounts.Act, f.Def.Site) {
			forms = append(forms, f)
		}
	}
	p.Nav, p.Title = "replay", p.L.T["nav.replay"]
	p.Data = map[string]any{"Forms": forms, "Form": r.URL.Query().Get("form"), "Jobs": h.adm.Jobs(p.P, "")}
	h.render(w, http.StatusOK, "replay", p)
	return nil
}

func (h *Handler) startReplay(w http.ResponseWriter, r *http.Request, p page) error {
	f := journal.Filter{Form: r.PostFormValue("form"), Site: r.PostFormValue("site")}
	var err error
	f.Since, f.Until, err = parseLocalWindow(r.PostFormValue("since"), r.PostFormValue("until"))
	if err != nil {
		return problem.New(problem.CodeInvalidRequest, err.Error())
	}
	j, err := h.adm.StartReplay(r.Context(), p.P, f, r.PostFormValue("mode") != "run", r.PostFormValue("retry_dead") == "on")
	if err != nil {
		return err
	}
	return back(w, r, "/admin/jobs/"+j.ID, "")
}

// parseLocalWindow reads the window of datetime-local controls (UTC).
func parseLocalWindow(since, until string) (time.Time, time.Time, error) {
	var out [2]time.Time
	for i, v := range []string{since, until} {
		if v == "" {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04", v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				return out[0], out[1], fmt.Errorf("%q is not a time such as 2027-03-01T09:00", v)
			}
		}
		out[i] = t
	}
	return out[0], out[1], nil
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request, p page) error {
	j, err := h.adm.JobOf(p.P, r.PathValue("id"))
	if err != nil {
		return err
	}
	if j.Running() {
		// The page follows the job without a script.
		w.Header().Set("Refresh", "1")
	}
	p.Nav = "replay"
	if j.Kind == "audit" {
		p.Nav = "forms"
	}
	p.Title = p.L.T["job."+j.Kind]
	var replayKeys, auditKeys []string
	replayKeys = j.Replay.Keys()
	auditKeys = j.Audit.Keys()
	p.Data = map[string]any{"Job": j, "ReplayKeys": replayKeys, "AuditKeys": auditKeys, "Form": h.adm.Forms.Get(j.Filter.Form)}
	h.render(w, http.StatusOK, "job", p)
	return nil
}
