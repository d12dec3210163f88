package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
)

// TestApplyShowsChangesAndAsksForYes: forms apply shows per form what
// changes, and applies nothing without --yes when a change removes a field
// that entries hold values of or changes unique or capacity of a form with
// entries; changes that touch no collected data apply at once.
func TestApplyShowsChangesAndAsksForYes(t *testing.T) {
	t.Parallel()
	const v1 = `
id: fair
site: town
fields:
  - {name: name,  type: text, required: true}
  - {name: phone, type: phone, region: CN, required: true}
  - {name: email, type: email}
unique: [[phone]]
capacity: 300
when_full: waitlist
spam: {honeypot: website}
`
	h := servertest.Start(t, v1, servertest.Options{})
	resp, err := http.Post(h.URL+"/v1/forms/fair/submissions", "application/json", strings.NewReader(`{"name":"Li Lei","phone":"13800138000"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("submit: %d", resp.StatusCode)
	}
	dir := t.TempDir()
	apply := func(def string, extra ...string) (int, string, string) {
		t.Helper()
		path := filepath.Join(dir, "forms.yaml")
		if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := run(append([]string{"forms", "apply", "-f", path, "--data", h.Data}, extra...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	definition := func() string {
		req, _ := http.NewRequest("GET", h.URL+"/v1/admin/forms/fair/definition", nil)
		req.Header.Set("Authorization", "Bearer "+h.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return b.String()
	}

	// Another form's definition under the same id: phone (which the entry
	// holds) removed, unique and capacity changed. Refused, saying what
	// and naming --yes.
	risky := strings.NewReplacer("  - {name: phone, type: phone, region: CN, required: true}\n", "", "unique: [[phone]]", "unique: [[email]]",
		"capacity: 300", "capacity: 2", "when_full: waitlist", "when_full: reject", "site: town", "site: other").Replace(v1)
	code, out, errOut := apply(risky)
	for _, want := range []string{"form fair:", "fields removed: phone", "capacity: 300 → 2", "unique: [phone] → [email]", "when_full: waitlist → reject", "site: town → other"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"nothing applied", "removes field phone, which entries hold values of", "changes capacity (300 → 2) of a form with 1 entries", "changes unique", "--yes"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, errOut)
		}
	}
	if code != 1 || strings.Contains(out, "applied") || !strings.Contains(definition(), "capacity: 300") {
		t.Fatalf("without --yes: exit %d, stdout %q, stored %q; want exit 1 and nothing applied", code, out, definition())
	}

	// Removing a field no entry filled in, adding one, and a new form
	// touch no collected data: applied without --yes.
	safe := strings.Replace(v1, "  - {name: email, type: email}\n", "  - {name: city, type: text}\n", 1) + "---\nid: fair-2\nfields: [{name: name, type: text}]\n"
	code, out, errOut = apply(safe)
	if code != 0 || !strings.Contains(out, "fields added: city") || !strings.Contains(out, "fields removed: email") ||
		!strings.Contains(out, "form fair-2:\n  new form") || !strings.Contains(out, "applied 2 form(s)") {
		t.Fatalf("a safe change: exit %d\n%s%s", code, out, errOut)
	}

	// With --yes the risky change applies.
	if code, out, errOut := apply(risky, "--yes"); code != 0 || !strings.Contains(out, "applied 1 form(s): fair") {
		t.Fatalf("with --yes: exit %d\n%s%s", code, out, errOut)
	}
	poll.Until(t, "the server to load the applied definition", 20*time.Second, func() bool { return strings.Contains(definition(), "capacity: 2") })
}
