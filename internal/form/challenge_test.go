package form

import (
	"strings"
	"testing"
)

// forms check names each bad proof-of-work setting and what would be
// right; good ones compile with their defaults.
func TestChallengeSettings(t *testing.T) {
	t.Parallel()
	const head = "id: f\nfields: [{name: name, type: text}]\n"
	for _, tc := range []struct{ spam, want string }{
		{"{challenge: pow}", ""},
		{"{challenge: pow, difficulty: 200000, challenge_fallback: spam}", ""},
		{"{challenge: pow, challenge_fallback: honeypot, honeypot: website}", ""},
		{"{challenge: captcha}", `spam.challenge "captcha" is not valid: use pow`},
		{"{challenge: pow, difficulty: 10}", "spam.difficulty 10 is out of range: use 1000 to 5000000"},
		{"{challenge: pow, difficulty: 99999999}", "spam.difficulty 99999999 is out of range"},
		{"{challenge: pow, challenge_fallback: allow}", `spam.challenge_fallback "allow" is not valid: use refuse`},
		{"{challenge: pow, challenge_fallback: honeypot}", "spam.challenge_fallback honeypot needs spam.honeypot or spam.min_seconds"},
		{"{difficulty: 5000}", "spam.difficulty is set but spam.challenge is not"},
		{"{challenge_fallback: spam}", "spam.challenge_fallback is set but spam.challenge is not"},
		{"{challenge: pow, dificulty: 5000}", "dificulty"},
	} {
		forms, err := Parse([]byte(head+"spam: "+tc.spam+"\n"), "forms.yaml")
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.spam, err)
				continue
			}
			r := forms[0].Def.Spam
			if !r.NeedsChallenge() || r.BaseDifficulty() < MinDifficulty || r.Fallback() == "" {
				t.Errorf("%s: compiled to %+v", tc.spam, r)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.spam, err, tc.want)
		}
	}
	if _, err := Parse([]byte("id: f\nfields: [{name: altcha, type: text}]\nspam: {challenge: pow}\n"), "forms.yaml"); err == nil ||
		!strings.Contains(err.Error(), "has the name of the proof-of-work's field") {
		t.Errorf("a field named altcha: %v", err)
	}
	var none *SpamRules
	if none.NeedsChallenge() || none.BaseDifficulty() != DefaultDifficulty || none.Fallback() != FallbackRefuse {
		t.Error("the defaults of a form without spam rules")
	}
}
