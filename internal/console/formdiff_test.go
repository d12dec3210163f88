package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

var confirmRe = regexp.MustCompile(`name="confirm" value="([0-9a-f]+)"`)

// confirmOf posts a definition to fair-a's editor and returns the confirm
// step's token, failing when the step does not come.
func confirmOf(t *testing.T, b *browser, def string) string {
	t.Helper()
	return confirmAt(t, b, "fair-a", def)
}

// confirmAt is confirmOf for the editor of another form.
func confirmAt(t *testing.T, b *browser, formID, def string) string {
	t.Helper()
	code, body := b.do("POST", "/admin/forms/"+formID+"/edit", url.Values{"definition": {def}})
	m := confirmRe.FindStringSubmatch(body)
	if code != 200 || m == nil || !strings.Contains(body, "Check the changes before they are saved") {
		t.Fatalf("no confirm step: %d %.3000s", code, body)
	}
	return m[1]
}

// TestEditorConfirmsChanges: the console's editor shows what a definition
// changes — the same plan formd forms apply prints — and what of it
// reaches collected entries, and saves only when that text is confirmed.
func TestEditorConfirmsChanges(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	submit(t, h, "fair-a", `{"name":"Ann","phone":"13800138000"}`)
	b.do("GET", "/admin/forms/fair-a/edit", nil)
	next := "id: fair-a\nsite: a\ntitle: {en: Fair A, zh: 甲市集}\nfields:\n  - {name: name, type: text, required: true}\n  - {name: email, type: email}\nunique: [[email]]\ncapacity: 5\nwhen_full: waitlist\n"
	code, body := b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {next}})
	for _, want := range []string{"Check the changes before they are saved", "Fields added: email", "Fields removed: phone",
		"Places: 1 → 5", "One entry per: [phone] → [email]",
		"The field phone is removed, and entries hold values of it", "Places changes from 1 to 5 on a form with 1 entries", "Save these changes"} {
		if !strings.Contains(body, want) {
			t.Errorf("the confirm step lacks %q", want)
		}
	}
	if code != 200 || t.Failed() {
		t.Fatalf("confirm step: %d %.4000s", code, body)
	}
	// Nothing is saved yet.
	if _, body := b.do("GET", "/admin/forms/fair-a/edit", nil); !strings.Contains(body, "{name: phone") {
		t.Fatalf("the definition changed before it was confirmed:\n%.3000s", body)
	}
	// A text edited after the step shows its own changes first.
	edited := strings.Replace(next, "capacity: 5", "capacity: 6", 1)
	if code, body := b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {edited}, "confirm": {confirmRe.FindStringSubmatch(body)[1]}}); code != 200 || !strings.Contains(body, "Places: 1 → 6") {
		t.Fatalf("an edited text was saved on the old confirmation: %d %.3000s", code, body)
	}
	token := confirmOf(t, b, edited)
	if code, body := b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {edited}, "confirm": {token}}); code != 200 || !strings.Contains(body, "The definition was saved.") {
		t.Fatalf("confirmed: %d %.3000s", code, body)
	}
	// In Chinese, the step speaks Chinese.
	b.do("GET", "/admin/forms/fair-a/edit?lang=zh", nil)
	code, body = b.do("POST", "/admin/forms/fair-a/edit", url.Values{"definition": {strings.Replace(edited, "capacity: 6", "capacity: 7", 1)}})
	if code != 200 || !strings.Contains(body, "保存前请核对改动") || !strings.Contains(body, "名额：6 → 7") {
		t.Fatalf("the Chinese confirm step: %d %.3000s", code, body)
	}
}
