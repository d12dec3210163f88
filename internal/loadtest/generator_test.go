package loadtest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/formd/formd/internal/form"
)

// The generator's payloads mean to formd what the checker assumes: every
// way of writing a person's phone is one person (the same unique claim),
// distinct people never share a claim, and every invalid body is refused.
func TestPayloadsAgainstTheForm(t *testing.T) {
	t.Parallel()
	forms, err := form.Parse([]byte(loadtestForm("lt", 10, "waitlist")), "loadtest form")
	if err != nil {
		t.Fatalf("the loadtest form does not parse: %v", err)
	}
	f := forms[0]
	validate := func(b []byte) (*form.Accepted, error) {
		var in map[string]any
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatalf("payload %s is not JSON: %v", b, err)
		}
		return f.Validate(in, form.NewHasher([]byte("loadtest")))
	}
	claims := map[string]int{}
	for _, i := range []int{0, 7, 12345, MaxPeople - 1} {
		p := newPerson(i)
		var first []string
		for s := range phoneStyles {
			acc, err := validate(p.body(s))
			if err != nil {
				t.Fatalf("person %d, phone %q: refused: %v", i, p.phone(s), err)
			}
			if len(acc.Claims) != 1 {
				t.Fatalf("person %d: %d unique claims, want 1", i, len(acc.Claims))
			}
			if first == nil {
				first = acc.Claims
			} else if acc.Claims[0] != first[0] {
				t.Errorf("person %d: phone %q is another person than %q", i, p.phone(s), p.phone(0))
			}
		}
		if other, ok := claims[first[0]]; ok {
			t.Errorf("persons %d and %d share a phone", other, i)
		}
		claims[first[0]] = i
		for v, bad := range invalidBodies {
			_, err := validate(bad(p))
			var ve *form.ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("invalid body %d of person %d accepted (%v): %s", v, i, err, bad(p))
			}
		}
	}
}

// Plans follow the shares and the seed, and a re-registration always
// writes the phone another way.
func TestPlans(t *testing.T) {
	t.Parallel()
	sh := Shares{DoubleClick: 0.2, Reregister: 0.3, Invalid: 0.1}
	var dbl, re, bad int
	const n = 20000
	for i := range n {
		p := makePlan(42, i, sh)
		if p != makePlan(42, i, sh) {
			t.Fatalf("plan %d differs for the same seed", i)
		}
		if p.reregister && p.reStyle == p.style {
			t.Fatalf("plan %d re-registers with the same phone style", i)
		}
		if p.invalid && (p.doubleClick || p.reregister) {
			t.Fatalf("plan %d is invalid and does more", i)
		}
		switch {
		case p.invalid:
			bad++
		default:
			if p.doubleClick {
				dbl++
			}
			if p.reregister {
				re++
			}
		}
	}
	// Loose bounds: the shares are probabilities, not quotas.
	within := func(name string, got int, want float64) {
		if f := float64(got) / n; f < want*0.85 || f > want*1.15 {
			t.Errorf("%s: %.3f of people, want about %.3f", name, f, want)
		}
	}
	within("invalid", bad, 0.1)
	within("double click", dbl, 0.2*0.9)
	within("re-register", re, 0.3*0.9)
	if p := makePlan(1, 5, Shares{}); p.invalid || p.doubleClick || p.reregister {
		t.Errorf("zero shares gave %+v", p)
	}
}
