package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// ChallengeField is the body field that carries a solved proof-of-work
// challenge: the altcha widget's name for it.
const ChallengeField = form.ChallengeField

// Proof is what intake needs for forms with spam.challenge: the signer
// keyed from the installation's secret and the per-address difficulty. A
// zero Proof makes every challenge form refuse or keep as spam what it is
// sent (it cannot check solutions). Spending a solution is the
// decision's (journal.Entry.Challenge): intake calls no store before the
// journal (DESIGN invariant 12).
type Proof struct {
	Signer   *challenge.Signer
	Adaptive *challenge.Adaptive
	// TTL is a challenge's life; challenge.DefaultTTL when zero.
	TTL time.Duration
}

func (p Proof) ttl() time.Duration {
	if p.TTL <= 0 {
		return challenge.DefaultTTL
	}
	return p.TTL
}

// ChallengePath is where a form's challenges are issued.
func ChallengePath(formID string) string { return "/v1/forms/" + formID + "/challenge" }

// registerChallenge adds the challenge route.
func (h *Handler) registerChallenge(mux *http.ServeMux) {
	mux.Handle("GET /v1/forms/{form}/challenge", h.wrap("challenge", h.issueChallenge))
	mux.Handle("OPTIONS /v1/forms/{form}/challenge", h.wrap("preflight", h.preflight))
}

// issueChallenge is GET /v1/forms/{form}/challenge: a fresh ALTCHA
// challenge for this form, as hard as the client's address has earned.
func (h *Handler) issueChallenge(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	rules := f.Def.Spam
	if !rules.NeedsChallenge() || h.cfg.Proof.Signer == nil {
		return problem.New(problem.CodeNotFound, "this form asks for no proof-of-work")
	}
	now := h.cfg.Now()
	d := rules.BaseDifficulty()
	if a := h.cfg.Proof.Adaptive; a != nil {
		d = a.Next(h.clientKey(r), d, form.MaxDifficulty*4, now)
	}
	body, err := json.Marshal(h.cfg.Proof.Signer.Issue(f.ID(), d, now.Add(h.cfg.Proof.ttl())))
	if err != nil {
		return fmt.Errorf("encode challenge: %w", err)
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// takeChallenge pulls the solution out of the values of a form that asks
// for one, so it is neither a field nor part of the request's digest: a
// retry that solved a fresh challenge is still the same request.
func takeChallenge(f *form.Form, b *body) string {
	if !f.Def.Spam.NeedsChallenge() {
		return ""
	}
	v, ok := b.values[ChallengeField]
	if !ok {
		return ""
	}
	delete(b.values, ChallengeField)
	s, isStr := v.(string)
	if !isStr {
		// A list or a number: a solution that cannot be one (malformed,
		// not missing).
		return "?"
	}
	// An empty string (the widget's field before it solved) is missing.
	return strings.TrimSpace(s)
}

// checkChallenge decides what intake can of a new key's proof-of-work,
// by computation alone: the solution's signature, expiry and form
// binding. A solution that passes is returned for the entry to carry
// (journal.Entry.Challenge): the decision spends it, in the store's
// transaction, so that a replay under another key is decided there
// (spam challenge-replayed, or challenge-invalid on a form that refuses).
// spam is the reason when the form keeps what fails as spam, refusal the
// problem when it refuses, both empty when it passes (or, with the
// honeypot fallback, when no solution came).
func (h *Handler) checkChallenge(f *form.Form, payload string, now time.Time) (spam string, c *journal.Challenge, refusal error) {
	rules := f.Def.Spam
	mode := rules.Fallback()
	var bad error
	switch {
	case payload == "":
		if mode == form.FallbackHoneypot {
			return "", nil, nil
		}
		bad = challenge.ErrMissing
	case h.cfg.Proof.Signer == nil:
		bad = challenge.ErrForged
	default:
		sol, verr := h.cfg.Proof.Signer.Verify(payload, f.ID(), now)
		if verr == nil {
			return "", &journal.Challenge{Signature: sol.Signature, Expires: sol.Expires, Refuse: mode == form.FallbackRefuse}, nil
		}
		bad = verr
	}
	reason := challenge.Reason(bad)
	if mode != form.FallbackRefuse {
		return reason, nil, nil
	}
	if errors.Is(bad, challenge.ErrMissing) {
		return "", nil, problem.New(problem.CodeChallengeRequired, "send a solved proof-of-work challenge in the "+ChallengeField+" field")
	}
	return "", nil, problem.New(problem.CodeChallengeInvalid, bad.Error()+" ("+reason+"): get a new challenge and send again with the same key")
}

// spamReason is the cheap checks' verdict: "honeypot", "min-seconds", or
// "" when neither fired.
func spamReason(f *form.Form, b body, now time.Time) string {
	rules := f.Def.Spam
	if rules == nil {
		return ""
	}
	if rules.Honeypot != "" {
		if v, ok := b.values[rules.Honeypot]; ok {
			if s, isStr := v.(string); !isStr || strings.TrimSpace(s) != "" {
				return "honeypot"
			}
		}
	}
	if rules.MinSeconds > 0 && !b.shown.IsZero() {
		if now.Sub(b.shown).Seconds() < rules.MinSeconds {
			return "min-seconds"
		}
	}
	return ""
}
