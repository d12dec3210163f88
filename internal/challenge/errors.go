package challenge

import "errors"

// Why a solution is refused. Each has a Reason, the text kept with a
// submission classed as spam for it.
var (
	// ErrMissing: the form asks for a solution and none came.
	ErrMissing = errors.New("no proof-of-work solution")
	// ErrMalformed: not a solution in ALTCHA's format.
	ErrMalformed = errors.New("the proof-of-work solution is malformed")
	// ErrForged: not signed by this installation.
	ErrForged = errors.New("the proof-of-work challenge was not issued here")
	// ErrExpired: issued too long ago.
	ErrExpired = errors.New("the proof-of-work challenge has expired")
	// ErrWrongForm: issued for another form.
	ErrWrongForm = errors.New("the proof-of-work challenge was issued for another form")
	// ErrWrongSolution: the number does not solve the challenge.
	ErrWrongSolution = errors.New("the proof-of-work solution is wrong")
	// ErrReplayed: spent already by another submission (the store says).
	ErrReplayed = errors.New("the proof-of-work solution was used already")
)

// Reason is the stable reason text for err (for the spam reason and the
// metrics), or "" when err is not one of this package's.
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.text
		}
	}
	return ""
}

var reasons = []struct {
	err  error
	text string
}{
	{ErrMissing, "challenge-missing"},
	{ErrMalformed, "challenge-malformed"},
	{ErrForged, "challenge-forged"},
	{ErrExpired, "challenge-expired"},
	{ErrWrongForm, "challenge-wrong-form"},
	{ErrWrongSolution, "challenge-wrong-solution"},
	{ErrReplayed, "challenge-replayed"},
}

// Reasons lists every reason text, for the string tables that explain
// them.
func Reasons() []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = r.text
	}
	return out
}
