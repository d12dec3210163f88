package form

import (
	"strings"
	"testing"
)

// TestMaskAndRestoreSecrets: every secret (secret and each of secrets,
// in forms and site documents) is hidden; sent back, each placeholder
// takes the stored value of the same url and position, and one with no
// stored value is refused by url.
func TestMaskAndRestoreSecrets(t *testing.T) {
	t.Parallel()
	const a, b, c = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "whsec_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "whsec_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
	src := "id: f\nsite: s\nfields: [{name: n, type: text}]\nnotify:\n  webhooks:\n    - url: https://one.example/h # the CRM\n      secret: " + a +
		"\n    - {url: \"https://two.example/h\", secrets: [" + b + ", " + c + "]}\n---\nsite: s\nnotify: {webhooks: [{url: https://one.example/h, secret: " + a + "}]}\n"
	masked := string(MaskSecrets([]byte(src)))
	for _, s := range []string{a, b, c} {
		if strings.Contains(masked, s) {
			t.Fatalf("masked still holds %s:\n%s", s, masked)
		}
	}
	if strings.Count(masked, HiddenSecret) != 4 || !strings.Contains(masked, "# the CRM") {
		t.Fatalf("masked:\n%s", masked)
	}
	if got := MaskSecrets([]byte("id: f\nfields: []\n")); string(got) != "id: f\nfields: []\n" {
		t.Fatalf("a definition without secrets changed: %q", got)
	}
	stored := map[string]Webhook{"https://one.example/h": {Secret: a}, "https://two.example/h": {Secrets: []string{b, c}}}
	known := func(url string) (Webhook, bool) { w, ok := stored[url]; return w, ok }
	back, err := RestoreSecrets([]byte(masked), known)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(back), HiddenSecret) || strings.Count(string(back), a) != 2 || !strings.Contains(string(back), b) || !strings.Contains(string(back), c) {
		t.Fatalf("restored:\n%s", back)
	}
	moved := strings.Replace(masked, "two.example", "three.example", 1)
	if _, err := RestoreSecrets([]byte(moved), known); err == nil || !strings.Contains(err.Error(), "https://three.example/h") {
		t.Fatalf("a hidden secret for a new url: %v, want an error naming it", err)
	}
	// A new secret typed in place of the placeholder is taken as it is.
	typed := strings.Replace(masked, HiddenSecret, "whsec_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD", 1)
	if back, err := RestoreSecrets([]byte(typed), known); err != nil || !strings.Contains(string(back), "whsec_DDDD") {
		t.Fatalf("a replaced secret: %v\n%s", err, back)
	}
}
