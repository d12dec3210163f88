package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// tokenOf adds an account and returns an API token of it.
func tokenOf(t *testing.T, h *servertest.Harness, email string, role accounts.Role, sites ...string) string {
	t.Helper()
	ctx := context.Background()
	a, err := h.Server.Accounts.AddAccount(ctx, accounts.Operator("test"), accounts.NewAccount{Email: email, Role: role, Sites: sites, Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := h.Server.Accounts.CreateToken(ctx, accounts.Operator("test"), a.ID, "build")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const fairV1 = `id: fair
site: town
title: {en: Town fair, zh: 集市}
fields:
  - {name: name, type: text, required: true}
  - {name: phone, type: phone, region: CN, required: true}
capacity: 3
notify:
  webhooks:
    - {url: "https://hooks.example.org/fair", secret: whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3}
`

// TestBuildFormsThroughTheAPI: create (once: the id taken is form-exists),
// plan, versions with who and what, rollback that waits for the
// confirmation of a change reaching entries, duplicate, archive; every
// publish in the audit log; an editor of another site neither sees nor
// builds on this one; a viewer reads versions without secrets.
func TestBuildFormsThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "", servertest.Options{})
	ed := client{t: t, base: h.URL, token: tokenOf(t, h, "ed@example.org", accounts.Editor, "town")}
	other := client{t: t, base: h.URL, token: tokenOf(t, h, "oz@example.org", accounts.Editor, "elsewhere")}
	viewer := client{t: t, base: h.URL, token: tokenOf(t, h, "vi@example.org", accounts.Viewer, "town")}
	owner := client{t: t, base: h.URL, token: h.Token}

	if code, b, _ := other.do("POST", "/v1/admin/forms", fairV1, true); code != 403 {
		t.Fatalf("an editor of another site creates on town: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms", fairV1, true); code != 201 || !strings.Contains(string(b), `"id":"fair"`) {
		t.Fatalf("create: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms", fairV1, true); code != 409 || problemCode(b) != "form-exists" {
		t.Fatalf("create again: %d %s, want 409 form-exists", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms", "id: x\nfields: [{name: a, type: txt}]\n", true); code != 422 || problemCode(b) != "invalid-form-definition" || !strings.Contains(string(b), "txt") {
		t.Fatalf("create an invalid form: %d %s", code, b)
	}
	c := client{t: t, base: h.URL}
	if code, b, _ := c.send("POST", "/v1/forms/fair/submissions", `{"name":"Ann","phone":"13800138000"}`, false, http.Header{"Idempotency-Key": {"k1"}}); code != 201 {
		t.Fatalf("submit: %d %s", code, b)
	}
	// The editor lowers capacity (PUT, as forms apply does) and adds a field.
	v2 := strings.Replace(strings.Replace(fairV1, "capacity: 3", "capacity: 10", 1), "  - {name: phone", "  - {name: email, type: email}\n  - {name: phone", 1)
	// The editor got the definition with the secret hidden; sending the
	// placeholder back keeps it.
	code, def, _ := ed.do("GET", "/v1/admin/forms/fair/definition", "", true)
	if code != 200 || strings.Contains(string(def), "whsec_MDEy") {
		t.Fatalf("the editor's definition: %d %s", code, def)
	}
	v2 = strings.Replace(v2, "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", hiddenSecret(t, def), 1)
	code, b, _ := ed.do("POST", "/v1/admin/forms/plan", v2, true)
	var plan struct {
		Changes []struct {
			Form  string
			Lines []string
		}
		Risks   []string
		Confirm string
	}
	if code != 200 || json.Unmarshal(b, &plan) != nil || len(plan.Changes) != 1 || !strings.Contains(strings.Join(plan.Changes[0].Lines, "|"), "capacity: 3 → 10") || len(plan.Risks) != 1 {
		t.Fatalf("plan: %d %s", code, b)
	}
	// The plan's token applies what it said (PUT asks for it too).
	if code, b, _ := ed.do("PUT", "/v1/admin/forms?confirm="+plan.Confirm, v2, true); code != 200 {
		t.Fatalf("apply v2: %d %s", code, b)
	}
	code, b, _ = viewer.do("GET", "/v1/admin/forms/fair/versions", "", true)
	var vs struct {
		Versions []struct {
			N                   int
			By, Action, Summary string
		}
	}
	if code != 200 || json.Unmarshal(b, &vs) != nil || len(vs.Versions) != 2 {
		t.Fatalf("versions: %d %s", code, b)
	}
	if v := vs.Versions[0]; v.N != 2 || !strings.HasPrefix(v.By, "ed@example.org") || v.Action != "forms.apply" || !strings.Contains(v.Summary, "fields added: email") || !strings.Contains(v.Summary, "capacity: 3 → 10") {
		t.Errorf("version 2: %+v", v)
	}
	if v := vs.Versions[1]; v.N != 1 || v.Action != "form.create" || v.Summary != "new form" {
		t.Errorf("version 1: %+v", v)
	}
	if code, b, _ := viewer.do("GET", "/v1/admin/forms/fair/versions/1", "", true); code != 200 || strings.Contains(string(b), "whsec_MDEy") || !strings.Contains(string(b), "capacity: 3") {
		t.Errorf("the viewer reads version 1: %d %s", code, b)
	}
	if code, b, _ := owner.do("GET", "/v1/admin/forms/fair/versions/1", "", true); code != 200 || !strings.Contains(string(b), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3") {
		t.Errorf("the owner reads version 1 with its secret: %d %s", code, b)
	}
	if code, b, _ := viewer.do("POST", "/v1/admin/forms/fair/versions/1/rollback", "", true); code != 403 {
		t.Errorf("a viewer rolls back: %d %s", code, b)
	}
	for _, path := range []string{"/v1/admin/forms/fair/versions", "/v1/admin/forms/fair/versions/1"} {
		if code, b, _ := other.do("GET", path, "", true); code != 404 || problemCode(b) != "form-not-found" {
			t.Errorf("an editor of another site reads %s: %d %s", path, code, b)
		}
	}
	if code, b, _ := other.do("POST", "/v1/admin/forms/fair/versions/1/rollback", "", true); code != 404 {
		t.Errorf("an editor of another site rolls back: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair/versions/9", "", true); code != 404 || problemCode(b) != "form-version-not-found" {
		t.Errorf("version 9: %d %s", code, b)
	}
	// Rolling back to version 1 changes capacity of a form with an entry:
	// refused without the confirmation, applied with it.
	code, b, _ = ed.do("POST", "/v1/admin/forms/fair/versions/1/rollback", "", true)
	if code != 409 || problemCode(b) != "confirmation-required" || !strings.Contains(string(b), "capacity (10 → 3)") {
		t.Fatalf("rollback without confirming: %d %s", code, b)
	}
	code, b, _ = ed.do("POST", "/v1/admin/forms/fair/versions/1/rollback?dry_run=true", "", true)
	var rb struct {
		Applied bool
		Plan    struct{ Confirm string }
	}
	if code != 200 || json.Unmarshal(b, &rb) != nil || rb.Applied || rb.Plan.Confirm == "" {
		t.Fatalf("rollback dry run: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/versions/1/rollback?confirm=wrong", "", true); code != 409 {
		t.Fatalf("rollback with a wrong token: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/versions/1/rollback?confirm="+rb.Plan.Confirm, "", true); code != 200 || !strings.Contains(string(b), `"applied":true`) {
		t.Fatalf("rollback confirmed: %d %s", code, b)
	}
	code, b, _ = owner.do("GET", "/v1/admin/forms/fair/definition", "", true)
	if code != 200 || !strings.Contains(string(b), "capacity: 3") || strings.Contains(string(b), "email") || !strings.Contains(string(b), "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3") {
		t.Fatalf("after the rollback: %d %s", code, b)
	}
	if code, b, _ = ed.do("GET", "/v1/admin/forms/fair/versions", "", true); code != 200 || json.Unmarshal(b, &vs) != nil || len(vs.Versions) != 3 || vs.Versions[0].Action != "form.rollback" || !strings.Contains(vs.Versions[0].Summary, "fields removed: email") {
		t.Fatalf("versions after the rollback: %d %s", code, b)
	}

	// Duplicate for next year: a new form with the same fields, no entries.
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/duplicate", `{"id":"fair-2028","title":{"en":"Town fair 2028","zh":"2028 集市"}}`, true); code != 201 {
		t.Fatalf("duplicate: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/duplicate", `{"id":"fair"}`, true); code != 409 || problemCode(b) != "form-exists" {
		t.Fatalf("duplicate onto an existing id: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair-2028/stats", "", true); code != 200 || !strings.Contains(string(b), `"received":0`) || !strings.Contains(string(b), "2028 集市") {
		t.Fatalf("the copy: %d %s", code, b)
	}
	// Archive: closed, out of the list, back with ?archived=true.
	if code, b, _ := viewer.do("POST", "/v1/admin/forms/fair/archive", "", true); code != 403 {
		t.Fatalf("a viewer archives: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/archive", "", true); code != 200 {
		t.Fatalf("archive: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms", "", true); code != 200 || strings.Contains(string(b), `"id":"fair"`) || !strings.Contains(string(b), `"id":"fair-2028"`) {
		t.Fatalf("the list after archiving: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms?archived=true", "", true); code != 200 || !strings.Contains(string(b), `"archived_at"`) {
		t.Fatalf("the list with archived forms: %d %s", code, b)
	}
	if code, b, _ := c.send("POST", "/v1/forms/fair/submissions", `{"name":"Bo","phone":"13800138001"}`, false, http.Header{"Idempotency-Key": {"k2"}}); code != 410 {
		t.Fatalf("submit to an archived form: %d %s, want 410 form-closed", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair/stats", "", true); code != 200 || !strings.Contains(string(b), `"received":1`) {
		t.Fatalf("the archived form keeps its entry: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/unarchive", "", true); code != 200 {
		t.Fatalf("unarchive: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms", "", true); code != 200 || !strings.Contains(string(b), `"id":"fair"`) {
		t.Fatalf("the list after unarchiving: %d %s", code, b)
	}
	// Delete: only a form that holds nothing; the id is free again after.
	if code, b, _ := viewer.do("DELETE", "/v1/admin/forms/fair-2028", "", true); code != 403 {
		t.Fatalf("a viewer deletes: %d %s", code, b)
	}
	// A form with an entry: what would go, and nothing deleted, until
	// its id is the confirmation.
	code, b, _ = ed.do("DELETE", "/v1/admin/forms/fair", "", true)
	if code != 409 || problemCode(b) != "form-delete-unconfirmed" || !strings.Contains(string(b), `"erases":{"entries":{"stored":1}`) ||
		!strings.Contains(string(b), "form fair holds 1 entry (1 stored)") || !strings.Contains(string(b), "?confirm=fair") {
		t.Fatalf("delete a form with an entry: %d %s", code, b)
	}
	if code, b, _ := ed.do("DELETE", "/v1/admin/forms/fair?confirm=fair-2028", "", true); code != 409 || problemCode(b) != "form-delete-unconfirmed" ||
		!strings.Contains(string(b), `the confirmation \"fair-2028\" is not its id`) {
		t.Fatalf("delete with another form's id: %d %s", code, b)
	}
	if code, b, _ := other.do("DELETE", "/v1/admin/forms/fair?confirm=fair", "", true); code != 404 {
		t.Fatalf("an editor of another site deletes: %d %s", code, b)
	}
	if code, b, _ := viewer.do("DELETE", "/v1/admin/forms/fair?confirm=fair", "", true); code != 403 {
		t.Fatalf("a viewer deletes with the confirmation: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair/stats", "", true); code != 200 || !strings.Contains(string(b), `"received":1`) {
		t.Fatalf("the form after refused deletions: %d %s", code, b)
	}
	if code, b, _ := ed.do("DELETE", "/v1/admin/forms/fair-2028", "", true); code != 200 {
		t.Fatalf("delete the empty copy: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair-2028/stats", "", true); code != 404 {
		t.Fatalf("the deleted form: %d %s", code, b)
	}
	if code, b, _ := ed.do("POST", "/v1/admin/forms/fair/duplicate", `{"id":"fair-2028"}`, true); code != 201 {
		t.Fatalf("the deleted form's id used again: %d %s", code, b)
	}
	// Confirmed: the form and its entry go; the audit log says what went.
	code, b, _ = ed.do("DELETE", "/v1/admin/forms/fair?confirm=fair", "", true)
	if code != 200 || !strings.Contains(string(b), `"deleted":true`) || !strings.Contains(string(b), `"erased":{"entries":{"stored":1}`) {
		t.Fatalf("delete confirmed: %d %s", code, b)
	}
	if code, b, _ := ed.do("GET", "/v1/admin/forms/fair/stats", "", true); code != 404 {
		t.Fatalf("the deleted form: %d %s", code, b)
	}
	if code, b, _ := ed.do("DELETE", "/v1/admin/forms/fair?confirm=fair", "", true); code != 404 {
		t.Fatalf("the deleted form deleted again: %d %s", code, b)
	}
	// Every publish, rollback, archive and delete is in the audit log.
	code, b, _ = owner.do("GET", "/v1/admin/audit-log?limit=100", "", true)
	for _, action := range []string{"form.create", "forms.apply", "form.rollback", "form.duplicate", "form.close", "form.archive", "form.unarchive", "form.delete"} {
		if code != 200 || !strings.Contains(string(b), `"`+action+`"`) {
			t.Errorf("the audit log lacks %s: %d %.2000s", action, code, b)
		}
	}
	if !strings.Contains(string(b), "erased 1 entry (1 stored)") {
		t.Errorf("the audit log does not say what the deletion erased: %.3000s", b)
	}
}

// hiddenSecret is the placeholder a definition shows for a secret.
func hiddenSecret(t *testing.T, def []byte) string {
	t.Helper()
	for _, l := range strings.Split(string(def), "\n") {
		if i := strings.Index(l, "secret: "); i >= 0 {
			return strings.Trim(strings.TrimSuffix(strings.TrimSpace(l[i+len("secret: "):]), "}"), `" `)
		}
	}
	t.Fatalf("no secret in %s", def)
	return ""
}
