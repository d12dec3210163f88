package intake

import (
	"encoding/json"
	"github.com/formd/formd/internal/problem"
	"net/http"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// PublicForm is what GET /v1/forms/{form} shows: enough for the SDK and the
// hosted page to render the form and say whether it takes submissions.
type PublicForm struct {
	ID          string       `json:"id"`
	Site        string       `json:"site"`
	Title       form.Text    `json:"title,omitempty"`
	Description form.Text    `json:"description,omitempty"`
	Fields      []form.Field `json:"fields"`
	Open        bool         `json:"open"`
	OpensAt     *time.Time   `json:"opens_at,omitempty"`
	ClosesAt    *time.Time   `json:"closes_at,omitempty"`
	// Capacity is absent for a form without a limit.
	Capacity   *PublicCapacity `json:"capacity,omitempty"`
	RequireKey bool            `json:"require_key"`
	Honeypot   string          `json:"honeypot,omitempty"`
	MinSeconds float64         `json:"min_seconds,omitempty"`
	Durability string          `json:"durability"`
	// Challenge is set when the form asks for a proof-of-work solution.
	Challenge *PublicChallenge `json:"challenge,omitempty"`
}

// PublicChallenge tells a client where to get a form's proof-of-work
// challenge, which field carries the solution, and what a submission
// without one gets (spam.challenge_fallback).
type PublicChallenge struct {
	URL      string `json:"url"`
	Field    string `json:"field"`
	Fallback string `json:"fallback"`
}

// PublicCapacity says whether places remain.
type PublicCapacity struct {
	Limit    int  `json:"limit"`
	Left     int  `json:"left"`
	Waitlist bool `json:"waitlist"`
	Full     bool `json:"full"`
}

// Public builds the public view of f at now; places is the store's count,
// if known.
func Public(f *form.Form, now time.Time, places store.Capacity, known bool) PublicForm {
	d := f.Def
	p := PublicForm{ID: d.ID, Site: d.Site, Title: d.Title, Description: d.Description, Fields: f.Fields(),
		Open: f.OpenAt(now), OpensAt: d.OpensAt, ClosesAt: d.ClosesAt, RequireKey: d.RequireKey, Durability: d.Durability}
	if d.Spam != nil {
		p.Honeypot, p.MinSeconds = d.Spam.Honeypot, d.Spam.MinSeconds
		if d.Spam.NeedsChallenge() {
			p.Challenge = &PublicChallenge{URL: ChallengePath(d.ID), Field: ChallengeField, Fallback: d.Spam.Fallback()}
		}
	}
	if d.Capacity != nil {
		c := &PublicCapacity{Limit: *d.Capacity, Left: *d.Capacity, Waitlist: d.WhenFull == form.WhenFullWaitlist}
		if known {
			c.Left = max(*d.Capacity-places.Taken, 0)
		}
		c.Full = c.Left == 0
		p.Capacity = c
	}
	return p
}

func (h *Handler) publicForm(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	var c store.Capacity
	known := false
	if h.cfg.Places != nil {
		c, known = h.cfg.Places.Places(r.Context(), f.ID())
	}
	body, err := json.Marshal(Public(f, h.cfg.Now(), c, known))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, body)
	return nil
}
