package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ChallengeField is the body field that carries a solved proof-of-work
// challenge: the altcha widget's name for it.
const ChallengeField = form.ChallengeField

// Challenges is the part of the store the proof-of-work check writes to:
// the replay store and the spam reasons (store.Challenges).
type Challenges interface {
	SpendChallenge(ctx context.Context, u store.ChallengeUse, now time.Time) (bool, error)
	NoteSpamReason(ctx context.Context, form, key, reason string, now time.Time) error
}

// Proof is what intake needs for forms with spam.challenge: the signer
// keyed from the installation's secret, the durable replay store, and the
// per-address difficulty. A zero Proof makes every challenge form answer
// challenge-required (it cannot check solutions).
type Proof struct {
	Signer     *challenge.Signer
	Challenges Challenges
	Adaptive   *challenge.Adaptive
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

// checkChallenge decides a new key's proof-of-work, last of the checks
// (so that a submission refused for its values does not spend its
// solution): spam is the reason when the form keeps what fails as spam,
// refusal the problem when it refuses, both empty when it passes (or,
// with the honeypot fallback, when no solution came). The spend is the
// store's unique signature; it records (form, key), so a retry of the
// same key — also after a crash between the spend and the journal append
// — is the same submission, not a replay. err is the store failing:
// nothing is journaled and the client sends again.
func (h *Handler) checkChallenge(ctx context.Context, f *form.Form, payload, key string, now time.Time) (spam string, refusal, err error) {
	rules := f.Def.Spam
	mode := rules.Fallback()
	var bad error
	switch {
	case payload == "":
		if mode == form.FallbackHoneypot {
			return "", nil, nil
		}
		bad = challenge.ErrMissing
	case h.cfg.Proof.Signer == nil || h.cfg.Proof.Challenges == nil:
		bad = challenge.ErrForged
	default:
		sol, verr := h.cfg.Proof.Signer.Verify(payload, f.ID(), now)
		if verr == nil {
			spent, serr := h.cfg.Proof.Challenges.SpendChallenge(ctx,
				store.ChallengeUse{Signature: sol.Signature, Form: f.ID(), Key: key, Expires: sol.Expires}, now)
			if serr != nil {
				return "", nil, storeUnavailable("spend the proof-of-work solution", serr)
			}
			if spent {
				return "", nil, nil
			}
			verr = challenge.ErrReplayed
		}
		bad = verr
	}
	reason := challenge.Reason(bad)
	if mode != form.FallbackRefuse {
		return reason, nil, nil
	}
	if errors.Is(bad, challenge.ErrMissing) {
		return "", problem.New(problem.CodeChallengeRequired, "send a solved proof-of-work challenge in the "+ChallengeField+" field"), nil
	}
	return "", problem.New(problem.CodeChallengeInvalid, bad.Error()+" ("+reason+"): get a new challenge and send again with the same key"), nil
}

// storeUnavailable is a store error met before the journal: the request
// is answered 503 with Retry-After, and nothing was journaled.
func storeUnavailable(op string, err error) error {
	p := problem.New(problem.CodeStoreUnavailable, "the proof-of-work check could not reach the store; nothing was received, send again")
	p.RetryAfter = 1
	return fmt.Errorf("%s: %w", op, errors.Join(p, err))
}

// noteSpam keeps why intake classed (form, key) as spam. It is best
// effort: the entry is journaled as spam either way, and a store that
// cannot take the note must not turn a kept submission into a refused
// one.
func (h *Handler) noteSpam(ctx context.Context, formID, key, reason string, now time.Time) {
	if reason == "" || h.cfg.Proof.Challenges == nil {
		return
	}
	if err := h.cfg.Proof.Challenges.NoteSpamReason(ctx, formID, key, reason, now); err != nil {
		h.cfg.Logger.Warn("spam reason not kept", "form", formID, "reason", reason, "err", err)
	}
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
