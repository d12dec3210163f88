package form

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

const spellingsYAML = `
id: spellings
fields:
  - {name: email, type: email}
  - {name: idno, type: text, normalize: [nfkc, strip_spaces, upper]}
  - {name: name, type: text}
  - {name: phone, type: phone, region: CN}
  - {name: amount, type: number}
  - {name: slot, type: select, options: [morning, afternoon]}
unique: [[email], [idno]]
`

// claimOf validates one value of one field and returns the claim of the
// unique set that field alone makes.
func claimOf(t *testing.T, f *Form, field, v string) string {
	t.Helper()
	acc, err := f.Validate(map[string]any{field: v}, testHasher)
	if err != nil {
		t.Fatalf("%s %q: %v", field, v, err)
	}
	if len(acc.Claims) != 1 {
		t.Fatalf("%s %q: claims %v", field, v, acc.Claims)
	}
	return acc.Claims[0]
}

// TestInvisibleSpellingsAreOneParticipant: spellings of one e-mail or one
// ID number that a person cannot tell apart are one participant.
func TestInvisibleSpellingsAreOneParticipant(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	// The e-mail spellings are shared with the admin search test: search
	// must find each where intake takes it for the same participant.
	for canonical, spellings := range readSpellings(t).Email {
		want := claimOf(t, f, "email", canonical)
		for _, s := range spellings {
			if got := claimOf(t, f, "email", s); got != want {
				t.Errorf("email %q is a different participant from %q", s, canonical)
			}
			acc, err := f.Validate(map[string]any{"email": s}, testHasher)
			if err != nil || string(acc.Data) != `{"email":"`+canonical+`"}` {
				t.Errorf("email %q is stored as %s (%v), want %s", s, acc.Data, err, canonical)
			}
		}
	}
	for _, tc := range []struct {
		field, canonical string
		spellings        []string
	}{
		{"idno", "11010119900307123X", []string{
			"11010119900307123x",
			"１１０１０１１９９００３０７１２３Ｘ",
			"110101 19900307 123X",
			"11010119900307\u200b123X",
			"11010119900307123X\u200b",
			"110101\u300019900307123X", // ideographic space
		}},
	} {
		want := claimOf(t, f, tc.field, tc.canonical)
		for _, s := range tc.spellings {
			if got := claimOf(t, f, tc.field, s); got != want {
				t.Errorf("%s %q is a different participant from %q", tc.field, s, tc.canonical)
			}
		}
	}
}

// Spellings are the values of testdata/spellings.json: canonical value →
// the spellings intake takes for it.
type Spellings struct {
	Email map[string][]string `json:"email"`
	Phone map[string][]string `json:"phone"`
}

func readSpellings(t *testing.T) Spellings {
	t.Helper()
	b, err := os.ReadFile("testdata/spellings.json")
	if err != nil {
		t.Fatal(err)
	}
	var s Spellings
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("testdata/spellings.json: %v", err)
	}
	return s
}

// phoneSpellings is the phone spellings (region CN) as spelling → the
// stored number.
func phoneSpellings(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for canonical, spellings := range readSpellings(t).Phone {
		for _, s := range spellings {
			out[s] = canonical
		}
	}
	return out
}

func TestStoredTextKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	acc, err := f.Validate(map[string]any{"name": "\u202e（李雷）\u200b", "email": "ＡＮＮ@example.org"}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"email":"ann@example.org","name":"（李雷）"}`
	if string(acc.Data) != want {
		t.Fatalf("data %s, want %s", acc.Data, want)
	}
	// An emoji sequence keeps its joiners.
	acc, err = f.Validate(map[string]any{"name": "👩\u200d💻 Ann"}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(acc.Data), "👩\u200d💻") {
		t.Fatalf("the zero-width joiner of an emoji sequence was dropped: %s", acc.Data)
	}
}

func TestInvisibleOnlyIsMissing(t *testing.T) {
	t.Parallel()
	f := mustForm(t, `
id: req
fields:
  - {name: name, type: text, required: true}
  - {name: email, type: email, required: true}
`)
	_, err := f.Validate(map[string]any{"name": "\u200b\u200d\ufeff ", "email": "\u00ad\u3000"}, testHasher)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 2 {
		t.Fatalf("err = %v, want both fields required", err)
	}
	for _, fe := range ve.Errors {
		if fe.Code != "required" {
			t.Errorf("%s: code %s, want required", fe.Field, fe.Code)
		}
	}
}

func TestPhoneExtensionsAreKept(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	for in, want := range phoneSpellings(t) {
		acc, err := f.Validate(map[string]any{"phone": in}, testHasher)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := string(acc.Data); got != `{"phone":"`+want+`"}` {
			t.Errorf("%q: data %s, want phone %s", in, got, want)
		}
	}
	a, _ := f.Validate(map[string]any{"phone": "+86 10 6552 9988 ext. 5"}, testHasher)
	b, _ := f.Validate(map[string]any{"phone": "+86 10 6552 9988 ext. 6"}, testHasher)
	if a.Fingerprint == b.Fingerprint {
		t.Error("two extensions of one switchboard have one fingerprint")
	}
}

// TestNumbersAreDecimalAndExact: a number is the decimal written, never a
// float's rounding of it.
func TestNumbersAreDecimalAndExact(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	ok := map[string]string{
		"2":                              "2",
		"2.50":                           "2.5",
		"-0":                             "0",
		"1e3":                            "1000",
		"1.5E-3":                         "0.0015",
		"007":                            "7",
		"123456789012345678901234567890": "123456789012345678901234567890",
		"0.12345678901234567891":         "0.12345678901234567891",
		"４２":                             "42",
	}
	for in, want := range ok {
		acc, err := f.Validate(map[string]any{"amount": json.Number(in)}, testHasher)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := string(acc.Data); got != `{"amount":`+want+`}` {
			t.Errorf("%q: data %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{"0x1p4", "1_000", "1e-400", "1e400", "Inf", "NaN", "1234567890123456789012345678901", "0.123456789012345678901", "1,5", "--1", "1e", ".", ""} {
		_, err := f.Validate(map[string]any{"amount": in}, testHasher)
		if in == "" {
			if err != nil {
				t.Errorf("an empty optional number: %v", err)
			}
			continue
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Errors[0].Code != "not-a-number" {
			t.Errorf("%q: err %v, want not-a-number", in, err)
		}
	}
}

func TestBoundsOfLongNumbersAreExact(t *testing.T) {
	t.Parallel()
	f := mustForm(t, `
id: b
fields: [{name: n, type: number, max: 9007199254740993}]
`)
	// 9007199254740993 is 2^53+1: as a float64 it rounds to 2^53.
	if _, err := f.Validate(map[string]any{"n": json.Number("9007199254740993")}, testHasher); err != nil {
		t.Errorf("the bound itself: %v", err)
	}
}

func TestSelectMatchesWhatPeopleSee(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	acc, err := f.Validate(map[string]any{"slot": "ｍｏｒｎｉｎｇ\u200b"}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if string(acc.Data) != `{"slot":"morning"}` {
		t.Fatalf("data %s", acc.Data)
	}
}

func TestUnknownFields(t *testing.T) {
	t.Parallel()
	keep := mustForm(t, `
id: keep
fields: [{name: name, type: text}]
spam: {honeypot: website}
`)
	in := map[string]any{"name": "Ann", "utm_source": "poster", "website": "", "n": json.Number("2")}
	acc, err := keep.Validate(in, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"Ann","_extra":{"n":2,"utm_source":"poster"}}`; string(acc.Data) != want {
		t.Fatalf("data %s, want %s", acc.Data, want)
	}
	plain, _ := keep.Validate(map[string]any{"name": "Ann"}, testHasher)
	if plain.Fingerprint == acc.Fingerprint {
		t.Error("fields the form does not define are not in the fingerprint")
	}
	reject := mustForm(t, `
id: reject
unknown_fields: reject
fields: [{name: name, type: text}]
`)
	_, err = reject.Validate(map[string]any{"name": "Ann", "utm_source": "x", "coupon": "y"}, testHasher)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 2 || ve.Errors[0].Field != "coupon" || ve.Errors[0].Code != "unknown-field" {
		t.Fatalf("err = %v, want unknown-field for coupon and utm_source", err)
	}
}

func TestDigestIgnoresEncoding(t *testing.T) {
	t.Parallel()
	a := testHasher.Digest("f", map[string]any{"n": json.Number("2"), "name": "Ann"})
	b := testHasher.Digest("f", map[string]any{"n": "2", "name": " Ann\u200b"})
	c := testHasher.Digest("f", map[string]any{"n": "3", "name": "Ann"})
	if a != b {
		t.Error("a JSON body and the same values as form fields have different digests")
	}
	if a == c {
		t.Error("different values have one digest")
	}
}

func TestHashesAreKeyed(t *testing.T) {
	t.Parallel()
	f := mustForm(t, spellingsYAML)
	in := map[string]any{"email": "ann@example.org"}
	a, _ := f.Validate(in, testHasher)
	b, _ := f.Validate(in, NewHasher([]byte("another installation's secret..")))
	if a.Fingerprint == b.Fingerprint || a.Claims[0] == b.Claims[0] {
		t.Fatal("the fingerprint and claims do not depend on the installation's secret")
	}
}
