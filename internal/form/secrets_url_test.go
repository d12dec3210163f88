package form

import (
	"strings"
	"testing"
)

// TestMaskWebhookURLQuery is issue 30's finding: viewers and editors saw
// webhook urls with their query tokens. The query (and user info) is
// hidden as secrets are; sent back unchanged, the stored url is kept.
func TestMaskWebhookURLQuery(t *testing.T) {
	t.Parallel()
	const full = "https://oapi.example.com/robot/send?access_token=tok-SECRET-123"
	src := "id: f\nfields: [{name: n, type: text}]\nnotify:\n  webhooks:\n    - url: " + full + "\n    - url: https://user:pw-SECRET@two.example/h\n    - url: https://plain.example/h\n"
	masked := string(MaskSecrets([]byte(src)))
	for _, s := range []string{"tok-SECRET-123", "access_token", "pw-SECRET", "user:"} {
		if strings.Contains(masked, s) {
			t.Fatalf("masked still holds %s:\n%s", s, masked)
		}
	}
	if !strings.Contains(masked, "https://oapi.example.com/robot/send?"+HiddenSecret) || !strings.Contains(masked, "https://plain.example/h") {
		t.Fatalf("masked:\n%s", masked)
	}
	stored := []Webhook{{URL: full}, {URL: "https://user:pw-SECRET@two.example/h"}, {URL: "https://plain.example/h"}}
	known := func(u string) (Webhook, bool) {
		for _, w := range stored {
			if w.URL == u || MaskURL(w.URL) == u {
				return w, true
			}
		}
		return Webhook{}, false
	}
	back, err := RestoreSecrets([]byte(masked), known)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back), full) || !strings.Contains(string(back), "pw-SECRET@two.example") || strings.Contains(string(back), HiddenSecret) {
		t.Fatalf("restored:\n%s", back)
	}
	moved := strings.Replace(masked, "oapi.example.com", "other.example.com", 1)
	if _, err := RestoreSecrets([]byte(moved), known); err == nil || !strings.Contains(err.Error(), "other.example.com") {
		t.Fatalf("a hidden query for a new url: %v", err)
	}
}

// TestUnknownFieldsLoseBidiControls is issue 30's loose end: a field the
// form does not define kept bidi controls that a known text field loses
// ("evil\u202egpj.exe" shows as "evilexe.jpg"); its name, its value and
// the strings inside a list or object are cleaned the same way.
func TestUnknownFieldsLoseBidiControls(t *testing.T) {
	t.Parallel()
	f := mustForm(t, "id: keep\nfields: [{name: name, type: text}]\n")
	acc, err := f.Validate(map[string]any{"name": "Ann", "file\u202e": "evil\u202egpj.exe", "tags": []any{"a\u2066b"}, "o": map[string]any{"k\u200f": "v\u061c"}}, testHasher)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"Ann","_extra":{"file":"evilgpj.exe","o":{"k":"v"},"tags":["ab"]}}`; string(acc.Data) != want {
		t.Fatalf("data %s, want %s", acc.Data, want)
	}
}
