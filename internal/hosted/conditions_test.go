package hosted

import (
	"strings"
	"testing"
)

// A form with show_if gives the page its conditions and the script that
// applies them (served beside formd.js); every field is on the page, so
// without JavaScript it still works (the server ignores what is not shown).
func TestPageCarriesConditions(t *testing.T) {
	t.Parallel()
	h, mux := muxFor(t, `
id: exam
fields:
  - {name: age_group, type: select, options: [adult, minor]}
  - {name: guardian_phone, type: phone, required: true, show_if: {field: age_group, equals: minor}}
---
id: plain
fields: [{name: name, type: text}]
`)
	page := body(t, get(t, mux, "/f/exam", nil))
	for _, want := range []string{
		`<script type="module" src="/sdk/conditions.js?v=` + h.sdkFiles["conditions.js"].version + `"></script>`,
		`data-formd-conditions="[{&#34;name&#34;:&#34;age_group&#34;},{&#34;name&#34;:&#34;guardian_phone&#34;,&#34;show_if&#34;:{&#34;field&#34;:&#34;age_group&#34;,&#34;equals&#34;:&#34;minor&#34;}}]"`,
		`<div class="field" data-field="guardian_phone">`,
		`name="guardian_phone"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s\n%s", want, page)
		}
	}
	if plain := body(t, get(t, mux, "/f/plain", nil)); strings.Contains(plain, "conditions") {
		t.Error("a form without conditions loads the conditions script")
	}
	res := get(t, mux, "/sdk/conditions.js", nil)
	if js := body(t, res); res.StatusCode != 200 || !strings.Contains(js, "export function shown") {
		t.Fatalf("conditions.js: %d", res.StatusCode)
	}
}
