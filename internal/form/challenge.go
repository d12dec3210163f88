package form

import "fmt"

// ChallengeField is the body field that carries a proof-of-work solution
// (the altcha widget's name for it); a form with spam.challenge may not
// define a field of that name.
const ChallengeField = "altcha"

// checkChallenge checks the proof-of-work settings of spam: each names the
// setting and what would be right.
func (c *compiler) checkChallenge(r *SpamRules) {
	switch r.Challenge {
	case "", ChallengePoW:
	default:
		c.add("", fmt.Sprintf("spam.challenge %q is not valid: use pow (a proof-of-work solution with each new key) or leave it out", r.Challenge))
		return
	}
	if r.Challenge == "" {
		if r.Difficulty != 0 {
			c.add("", "spam.difficulty is set but spam.challenge is not: add challenge: pow, or remove difficulty")
		}
		if r.ChallengeFallback != "" {
			c.add("", "spam.challenge_fallback is set but spam.challenge is not: add challenge: pow, or remove challenge_fallback")
		}
		return
	}
	if d := r.Difficulty; d != 0 && (d < MinDifficulty || d > MaxDifficulty) {
		c.add("", fmt.Sprintf("spam.difficulty %d is out of range: use %d to %d (the default, %d, takes a mid-range phone well under a second)",
			d, MinDifficulty, MaxDifficulty, DefaultDifficulty))
	}
	switch r.ChallengeFallback {
	case "", FallbackRefuse, FallbackSpam, FallbackHoneypot:
	default:
		c.add("", fmt.Sprintf("spam.challenge_fallback %q is not valid: use refuse (the default: a 4xx answer), spam (kept as spam with the reason) or honeypot (without a solution, the honeypot and min_seconds decide)", r.ChallengeFallback))
	}
	if r.ChallengeFallback == FallbackHoneypot && r.Honeypot == "" && r.MinSeconds == 0 {
		c.add("", "spam.challenge_fallback honeypot needs spam.honeypot or spam.min_seconds to fall back on: set them, or use refuse or spam")
	}
}
