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
	// Places is set when a select field's options have places of their
	// own: which of them still have some.
	Places *PublicPlaces `json:"places,omitempty"`
	// Pages are the form's steps (titles and field names), for custom
	// front-ends; each field's show_if and prefill are in Fields.
	Pages []form.Page `json:"pages,omitempty"`
}

// PublicPlaces says, for the select field whose options have places of
// their own, how many each option has left, so that a client can show
// "full — waitlist" beside a full session. It is a display: the store's
// decision is what counts.
type PublicPlaces struct {
	Field string `json:"field"`
	// Waitlist says a full option takes its own waitlist (when_full:
	// waitlist); otherwise a full option is refused with 409
	// capacity-reached naming it.
	Waitlist bool           `json:"waitlist"`
	Options  []PublicOption `json:"options"`
}

// PublicOption is one option's places: Limit and Left are absent for an
// option without a limit of its own.
type PublicOption struct {
	Value string `json:"value"`
	Limit *int   `json:"limit,omitempty"`
	Left  *int   `json:"left,omitempty"`
	Full  bool   `json:"full"`
}

// publicPlaces is the places of f's options, places being the store's
// count when known (otherwise every option shows its whole limit).
func publicPlaces(f *form.Form, places store.Capacity, known bool) *PublicPlaces {
	field, opts := f.PlaceField()
	if field == "" {
		return nil
	}
	p := &PublicPlaces{Field: field, Waitlist: f.Def.WhenFull == form.WhenFullWaitlist, Options: make([]PublicOption, len(opts))}
	for i, o := range opts {
		po := PublicOption{Value: o.Value}
		if o.Capacity != nil {
			limit, left := *o.Capacity, *o.Capacity
			if known {
				left = max(limit-places.Options[o.Value].Taken, 0)
			}
			po.Limit, po.Left, po.Full = &limit, &left, left == 0
		}
		p.Options[i] = po
	}
	return p
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
	p.Places = publicPlaces(f, places, known)
	p.Pages = d.Pages
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
