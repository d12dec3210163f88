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
		path := writeForms(t, dir, def)
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

// TestApplyRefusesWhereNoFormdIs: in a directory with no ./formd-data and
// no --data, --store or --server, forms apply writes nothing (no empty
// store created where it stands) and says how to name the server's data.
// It does not run in parallel: it changes the working directory.
func TestApplyRefusesWhereNoFormdIs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "photo.yaml")
	if err := os.WriteFile(path, []byte("id: photo\nfields: [{name: name, type: text}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, env := range []string{"FORMD_DATA", "FORMD_STORE", "FORMD_SERVER", "FORMD_CONFIG"} {
		t.Setenv(env, "")
	}
	for _, sub := range [][]string{{"apply", "-f", path}, {"export", "--form", "photo"}} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"forms"}, sub...), &out, &errOut)
		if code != 2 {
			t.Errorf("forms %s: exit %d, want 2\n%s%s", sub[0], code, out.String(), errOut.String())
		}
		for _, want := range []string{"no formd data here", filepath.Join(dir, "formd-data") + " does not exist", "--data DIR (FORMD_DATA)", "--store postgres://", "--server URL", "FORMD_TOKEN"} {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("forms %s: the refusal lacks %q:\n%s", sub[0], want, errOut.String())
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "formd-data")); !os.IsNotExist(err) {
		t.Fatalf("forms apply made ./formd-data where no formd was: %v", err)
	}
	// With the default directory there (a server's own), it applies.
	if err := os.Mkdir(filepath.Join(dir, "formd-data"), 0o700); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"forms", "apply", "-f", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "applied 1 form(s): photo") {
		t.Fatalf("with ./formd-data: exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

// TestApplyAndExportThroughTheServer: --server with a token applies
// through the admin API, with the same plan and --yes rule as the local
// path, and forms export writes the stored definition back, which applies
// unchanged.
func TestApplyAndExportThroughTheServer(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: fair\nsite: town\nfields:\n  - {name: name, type: text}\n  - {name: phone, type: phone, region: CN}\ncapacity: 5\n", servertest.Options{})
	resp, err := http.Post(h.URL+"/v1/forms/fair/submissions", "application/json", strings.NewReader(`{"name":"Li Lei","phone":"13800138000"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "fair.yaml")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	write := func(def string) {
		if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("id: fair\nsite: town\nfields:\n  - {name: name, type: text}\ncapacity: 2\n")
	if code, _, errOut := cli("forms", "apply", "-f", path, "--server", h.URL); code != 2 || !strings.Contains(errOut, "FORMD_TOKEN") {
		t.Fatalf("--server without a token: exit %d %s", code, errOut)
	}
	if code, _, errOut := cli("forms", "apply", "-f", path, "--server", h.URL, "--token", "fmd_wrong"); code != 1 || !strings.Contains(errOut, "401 unauthorized") {
		t.Fatalf("--server with a wrong token: exit %d %s", code, errOut)
	}
	code, out, errOut := cli("forms", "apply", "-f", path, "--server", h.URL, "--token", h.Token)
	if code != 1 || !strings.Contains(out, "fields removed: phone") || !strings.Contains(out, "capacity: 5 → 2") ||
		!strings.Contains(errOut, "nothing applied") || !strings.Contains(errOut, "removes field phone") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("a risky change through --server: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli("forms", "apply", "-f", path, "--server", h.URL, "--token", h.Token, "--yes"); code != 0 || !strings.Contains(out, "applied 1 form(s) through "+h.URL+": fair") {
		t.Fatalf("with --yes through --server: exit %d\n%s%s", code, out, errOut)
	}
	exported := filepath.Join(dir, "exported.yaml")
	if code, out, errOut := cli("forms", "export", "--form", "fair", "--server", h.URL, "--token", h.Token, "-o", exported); code != 0 {
		t.Fatalf("export through --server: exit %d\n%s%s", code, out, errOut)
	}
	got, err := os.ReadFile(exported)
	if err != nil || !strings.Contains(string(got), "capacity: 2") {
		t.Fatalf("exported %q %v", got, err)
	}
	if code, out, errOut := cli("forms", "export", "--form", "fair", "--data", h.Data); code != 0 || out != string(got) {
		t.Fatalf("export from --data: exit %d, %q, want %q\n%s", code, out, got, errOut)
	}
	if code, out, errOut := cli("forms", "apply", "-f", exported, "--data", h.Data); code != 0 || strings.Contains(out, "→") {
		t.Fatalf("the export applied again: exit %d, want no change\n%s%s", code, out, errOut)
	}
	if code, _, errOut := cli("forms", "export", "--form", "nope", "--server", h.URL, "--token", h.Token); code != 1 || !strings.Contains(errOut, "form-not-found") {
		t.Fatalf("export of no form: exit %d %s", code, errOut)
	}
}
