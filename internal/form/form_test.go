package form

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const fairYAML = `
id: spring-fair-2027
site: community-center
title: Spring fair registration
fields:
  - {name: name,    type: text,   required: true, max: 100, label: {en: Name, zh: 姓名}}
  - {name: phone,   type: phone,  required: true, region: CN, label: 手机号}
  - {name: email,   type: email}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
  - {name: slot,    type: select, options: [morning, afternoon]}
  - {name: extras,  type: multiselect, options: [lunch, parking, tshirt]}
  - {name: consent, type: checkbox, required: true}
  - {name: day,     type: date, min: 2027-03-01, max: 2027-03-10}
unique: [[phone]]
capacity: 300
when_full: waitlist
opens_at: 2027-03-01T09:00:00+08:00
closes_at: 2027-03-10T18:00:00+08:00
durability: sync
require_key: false
spam: {honeypot: website, min_seconds: 2}
origins: [https://fair.example.org]
retention: 365d
`

func mustForm(t testing.TB, src string) *Form {
	t.Helper()
	forms, err := Parse([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return forms[0]
}

func TestParseDesignExample(t *testing.T) {
	t.Parallel()
	f := mustForm(t, fairYAML)
	if f.ID() != "spring-fair-2027" || f.Def.Site != "community-center" || *f.Def.Capacity != 300 || f.Def.WhenFull != WhenFullWaitlist {
		t.Fatalf("unexpected definition: %+v", f.Def)
	}
	if got := f.Fields()[0].Label.For("zh-CN"); got != "姓名" {
		t.Errorf("label zh-CN = %q", got)
	}
	if got := f.Fields()[1].Label.For("en"); got != "手机号" {
		t.Errorf("plain label = %q", got)
	}
	if time := f.Def.Retention; time == nil || *time <= 0 {
		t.Errorf("retention not parsed")
	}
}

func TestParseShapes(t *testing.T) {
	t.Parallel()
	one := `{"id":"a","fields":[{"name":"x","type":"text"}]}`
	cases := map[string]string{
		"json object":    one,
		"json list":      "[" + one + `,{"id":"b","fields":[{"name":"x","type":"text"}]}]`,
		"yaml documents": "id: a\nfields: [{name: x, type: text}]\n---\nid: b\nfields: [{name: y, type: email}]\n---\nid: c\nfields: [{name: z, type: date}]\n",
		"forms wrapper":  `{"forms":[` + one + `]}`,
	}
	want := map[string]int{"json object": 1, "json list": 2, "yaml documents": 3, "forms wrapper": 1}
	for name, src := range cases {
		forms, err := Parse([]byte(src), "")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(forms) != want[name] {
			t.Errorf("%s: got %d forms, want %d", name, len(forms), want[name])
		}
	}
}

func TestParseRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, src, want string }{
		{"unknown key", "id: a\nfields: [{name: x, type: text, requried: true}]", `form "a": field "x": unknown field setting "requried"; valid: `},
		{"unknown form key", "id: a\ncapcity: 3\nfields: [{name: x, type: text}]", `unknown setting "capcity"`},
		{"bad type", "id: a\nfields: [{name: x, type: txt}]", `field "x": type "txt" is not valid; use one of: text, textarea`},
		{"min over max", "id: a\nfields: [{name: n, type: number, min: 5, max: 4}]", `field "n": min 5 is greater than max 4`},
		{"missing id", "fields: [{name: x, type: text}]", "id is missing"},
		{"bad id", "id: Spring Fair\nfields: [{name: x, type: text}]", `id "Spring Fair" is not valid`},
		{"unique unknown", "id: a\nfields: [{name: x, type: text}]\nunique: [[phone]]", `unique[0] names "phone", which is not a field of this form; fields are: x`},
		{"bad region", "id: a\nfields: [{name: p, type: phone, region: XX}]", `region "XX" is not a known region`},
		{"options on text", "id: a\nfields: [{name: x, type: text, options: [a]}]", "options does not apply to type text"},
		{"select without options", "id: a\nfields: [{name: s, type: select}]", "options is empty"},
		{"option capacity on a multiselect", "id: a\nfields: [{name: s, type: multiselect, options: [{value: am, capacity: 3}, pm]}]",
			`option "am" has a capacity, but only the options of a select field may have places of their own (this field is a multiselect)`},
		{"negative option capacity", "id: a\nfields: [{name: s, type: select, options: [{value: am, capacity: -1}]}]", `option "am" has capacity -1`},
		{"two place fields", "id: a\nfields: [{name: s, type: select, options: [{value: am, capacity: 3}]}, {name: t, type: select, options: [{value: x, capacity: 1}]}]",
			"options with a capacity are on s and t; only one select field"},
		{"when_full without any capacity", "id: a\nwhen_full: waitlist\nfields: [{name: s, type: select, options: [am]}]", "neither the form nor an option has a capacity"},
		{"condition on a later field", "id: a\nfields: [{name: x, type: text, show_if: {field: y, answered: true}}, {name: y, type: text}]",
			`show_if names "y", which comes after this field; a condition may name only earlier fields`},
		{"condition on an unknown field", "id: a\nfields: [{name: x, type: text, show_if: {field: nope, equals: a}}]", `show_if names "nope", which is not a field of this form`},
		{"condition on itself", "id: a\nfields: [{name: x, type: text, show_if: {field: x, answered: true}}]", `show_if names "x", which comes after this field`},
		{"condition with two tests", "id: a\nfields: [{name: s, type: text}, {name: x, type: text, show_if: {field: s, equals: a, answered: true}}]", "needs exactly one of equals, in, not, answered"},
		{"condition with a value that is not an option", "id: a\nfields: [{name: s, type: select, options: [a, b]}, {name: x, type: text, show_if: {any: [{field: s, in: [a, c]}]}}]",
			`show_if.any[0] compares "s" with "c", which is not one of its options`},
		{"empty all", "id: a\nfields: [{name: x, type: text, show_if: {all: []}}]", "show_if.all is empty"},
		{"a page naming a field twice", "id: a\nfields: [{name: x, type: text}]\npages: [{title: A, fields: [x, x]}]", `pages[0] names this field twice`},
		{"a field on two pages", "id: a\nfields: [{name: x, type: text}]\npages: [{fields: [x]}, {fields: [x]}]", `is on pages[0] and pages[1]`},
		{"a page naming an unknown field", "id: a\nfields: [{name: x, type: text}]\npages: [{fields: [x, y]}]", `pages[0] names "y", which is not a field of this form`},
		{"a field on no page", "id: a\nfields: [{name: x, type: text}, {name: y, type: text}]\npages: [{fields: [x]}]", "is on no page"},
		{"a hidden field on a page", "id: a\nfields: [{name: x, type: text}, {name: ref, type: hidden}]\npages: [{fields: [x, ref]}]", "is a hidden field, which no page shows"},
		{"a required hidden field", "id: a\nfields: [{name: ref, type: hidden, required: true}]", "a hidden field cannot be required"},
		{"option with an unknown setting", "id: a\nfields: [{name: s, type: select, options: [{value: am, places: 3}]}]", "places"},
		{"when_full", "id: a\ncapacity: 3\nwhen_full: queue\nfields: [{name: x, type: text}]", `when_full "queue" is not valid: use waitlist or reject`},
		{"unique_answer", "id: a\nunique_answer: secret\nfields: [{name: x, type: text}]", `unique_answer "secret" is not valid: use generic`},
		{"closes before opens", "id: a\nopens_at: 2027-03-02T00:00:00Z\ncloses_at: 2027-03-01T00:00:00Z\nfields: [{name: x, type: text}]", "is not after opens_at"},
		{"bad pattern", "id: a\nfields: [{name: x, type: text, pattern: '[a-'}]", "is not a valid regular expression"},
		{"reserved name", "id: a\nfields: [{name: _key, type: text}]", "reserved for formd"},
		{"duplicate field", "id: a\nfields: [{name: x, type: text}, {name: x, type: email}]", "declared twice"},
		{"origin with path", "id: a\norigins: [https://a.example/x]\nfields: [{name: x, type: text}]", "is not an origin"},
		{"durability", "id: a\ndurability: maybe\nfields: [{name: x, type: text}]", `durability "maybe" is not valid`},
		{"not yaml", "id: [a\n", "not valid YAML or JSON"},
		{"no fields", "id: a\n", "fields is empty"},
		{"date bound", "id: a\nfields: [{name: d, type: date, min: soon}]", `min "soon" must be a date written YYYY-MM-DD`},
		{"retention", "id: a\nretention: forever\nfields: [{name: x, type: text}]", "is not a duration"},
		{"twice", "[{id: a, fields: [{name: x, type: text}]}, {id: a, fields: [{name: x, type: text}]}]", "declared twice in this input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.src), "forms.yaml")
			if err == nil {
				t.Fatal("expected an error")
			}
			var de *DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("error is %T, want *DefinitionError: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "forms.yaml: ") {
				t.Fatalf("error %q does not name the source", err)
			}
		})
	}
}

// testHasher keys the hashes of these tests.
var testHasher = NewHasher([]byte("formd test secret, 32 bytes long"))

func TestValidateNormalizes(t *testing.T) {
	t.Parallel()
	f := mustForm(t, fairYAML)
	acc, err := f.Validate(map[string]any{
		"name":    "  Ａlice\u0301 ",
		"phone":   "+86 138 0013 8000",
		"email":   " Alice@Example.ORG ",
		"tickets": json.Number("2"),
		"slot":    "morning",
		"extras":  []any{"tshirt", "lunch", "lunch"},
		"consent": "on",
		"day":     "2027-03-02",
		"unknown": "kept",
		"_key":    "k",
	}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"Ａlicé","phone":"+8613800138000","email":"alice@example.org","tickets":2,"slot":"morning","extras":["lunch","tshirt"],"consent":true,"day":"2027-03-02","_extra":{"unknown":"kept"}}`
	if string(acc.Data) != want {
		t.Fatalf("data\n got %s\nwant %s", acc.Data, want)
	}
	var anyv map[string]any
	if err := json.Unmarshal(acc.Data, &anyv); err != nil {
		t.Fatalf("data is not JSON: %v", err)
	}
	if len(acc.Claims) != 1 {
		t.Fatalf("claims = %v", acc.Claims)
	}
}

func TestSamePersonSameClaimAndFingerprint(t *testing.T) {
	t.Parallel()
	f := mustForm(t, fairYAML)
	base := map[string]any{"name": "Bo", "consent": true, "phone": "+86 138 0013 8000"}
	other := map[string]any{"name": "  Bo", "consent": "true", "phone": "13800138000"}
	a, err := f.Validate(base, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Validate(other, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if a.Claims[0] != b.Claims[0] {
		t.Errorf("same phone written differently gives different claims")
	}
	if a.Fingerprint != b.Fingerprint {
		t.Errorf("same normalized content gives different fingerprints")
	}
	other["name"] = "Bob"
	c, _ := f.Validate(other, testHasher)
	if c.Fingerprint == a.Fingerprint || c.Claims[0] != a.Claims[0] {
		t.Errorf("a changed name must change the fingerprint but not the phone claim")
	}
}

func TestValidateErrors(t *testing.T) {
	t.Parallel()
	f := mustForm(t, fairYAML)
	_, err := f.Validate(map[string]any{
		"name":    strings.Repeat("x", 101),
		"phone":   "12",
		"email":   "not-an-email",
		"tickets": "5",
		"slot":    "evening",
		"extras":  []any{"pony"},
		"day":     "2027-02-30",
	}, testHasher)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	got := map[string]string{}
	for _, fe := range ve.Errors {
		got[fe.Field] = fe.Code
	}
	want := map[string]string{"name": "too-long", "phone": "invalid-phone", "email": "invalid-email", "tickets": "too-large", "slot": "invalid-option", "extras": "invalid-option", "consent": "required", "day": "invalid-date"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	for _, fe := range ve.Errors {
		if strings.Contains(fe.Message, "not-an-email") || strings.Contains(fe.Message, "evening") {
			t.Errorf("message echoes the value: %q", fe.Message)
		}
	}
}

func TestPhoneWithoutRegionNeedsCountryCode(t *testing.T) {
	t.Parallel()
	if _, err := NormalizePhone("13800138000", ""); err == nil {
		t.Fatal("a national number without a region must be refused")
	}
	got, err := NormalizePhone("+34 612 34 56 78", "")
	if err != nil || got != "+34612345678" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestOpenAt(t *testing.T) {
	t.Parallel()
	f := mustForm(t, fairYAML)
	if f.OpenAt(f.Def.OpensAt.Add(-1)) || !f.OpenAt(*f.Def.OpensAt) || f.OpenAt(*f.Def.ClosesAt) {
		t.Fatal("open window is [opens_at, closes_at)")
	}
}

// TestEveryProblemAtOnce: one run of a file with problems of every kind
// names each of them with its line, so the owner fixes them in one pass.
func TestEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	src := `id: one
titel: Misspelt
opens_at: 2027-03-01 9am
fields:
  - {name: n, type: number, min: 5, max: 4}
capacity: many
---
id: two
when_full: sometimes
fields:
  - {name: x, type: txt}
`
	_, err := Parse([]byte(src), "forms.yaml")
	var de *DefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	want := []struct {
		line int
		text string
	}{
		{2, `unknown setting "titel"`},
		{3, "opens_at must be an RFC 3339 time with its offset, such as 2027-03-01T09:00:00+08:00"},
		{6, "capacity"},
		{9, `when_full "sometimes" is not valid`},
		{11, `type "txt" is not valid`},
	}
	msg := err.Error()
	for _, w := range want {
		found := false
		for _, p := range de.Problems {
			if p.Line == w.line && strings.Contains(p.String(), w.text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem at line %d saying %q in:\n%s", w.line, w.text, msg)
		}
	}
}

// TestSiteSettings: a document with site and notify and no id is a site's
// settings; a mistake in one is named like a form's.
func TestSiteSettings(t *testing.T) {
	t.Parallel()
	set, err := ParseSet([]byte(`
site: club
notify:
  webhooks: [{url: "https://crm.example.org/hook", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]
  email: {to: [owner@example.org]}
---
id: fair
site: club
fields: [{name: n, type: text}]
`), "forms.yaml", nil)
	if err != nil || len(set.Sites) != 1 || len(set.Forms) != 1 || set.Sites[0].ID() != "club" {
		t.Fatalf("set %+v, %v", set, err)
	}
	if recs := set.Records(); len(recs) != 2 || recs[1].ID != "@club" || recs[1].Site != "club" {
		t.Fatalf("records %+v", recs)
	}
	_, err = ParseSet([]byte(`
site: club
notify:
  email: {confirm: email}
---
site: Bad Site
`), "forms.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "confirm names a form's field") || !strings.Contains(err.Error(), `site "Bad Site" is not valid`) {
		t.Fatalf("bad sites: %v", err)
	}
}
