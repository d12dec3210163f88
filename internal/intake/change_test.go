package intake_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

const changeForms = `
id: fair
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
  - name: session
    type: select
    required: true
    options:
      - {value: morning,   capacity: 1}
      - {value: afternoon, capacity: 1}
      - {value: evening}
unique: [[email]]
when_full: waitlist
edit_until: 2099-01-01T00:00:00Z
origins: [https://fair.example.org]
---
id: closed
fields:
  - {name: name, type: text, required: true}
edit_until: 2001-01-01T00:00:00Z
---
id: erasable
fields:
  - {name: name, type: text, required: true}
self_erase: true
`

// TestParticipantChange: PATCH /v1/entries/{token} needs the version it
// was made from, is validated as a submission, moves the entry into a
// free session and refuses a full one naming it (the place kept, whatever
// when_full says), answers a retry as the change it repeats, a stale
// version with 412 and the current one, another's participant with 409,
// a closed form with edit-closed; the entry's history keeps each
// earlier version, and made-up and revoked links are the same 404.
func TestParticipantChange(t *testing.T) {
	t.Parallel()
	h, c, ann := startFairOfAnnAndBo(t)
	submit := func(formID, key, body string) string { return linkOf(t, c, h.URL, formID, key, body) }
	patch := func(token, ifMatch, body string) (*httpResponse, map[string]any) {
		t.Helper()
		r := req{method: "PATCH", path: "/v1/entries/" + token, ctype: "application/json", body: body, headers: map[string]string{}}
		if ifMatch != "" {
			r.headers["If-Match"] = ifMatch
		}
		resp, b := send(t, c, h.URL, r)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return &httpResponse{status: resp.StatusCode, etag: resp.Header.Get("ETag"), changed: resp.Header.Get("Formd-Changed"),
			replayed: resp.Header.Get("Idempotent-Replayed"), body: b}, m
	}
	resp, body := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + ann})
	if resp.StatusCode != 200 || resp.Header.Get("ETag") != `"1"` || !bytes.Contains(body, []byte(`"edit_until":"2099-01-01T00:00:00Z"`)) {
		t.Fatalf("GET: %d %q %s", resp.StatusCode, resp.Header.Get("ETag"), body)
	}
	full := `{"name":"Ann","email":"ann@example.org","session":"afternoon"}`
	if r, _ := patch(ann, "", full); r.status != 428 || !bytes.Contains(r.body, []byte(`"if-match-required"`)) {
		t.Fatalf("no If-Match: %d %s", r.status, r.body)
	}
	if r, _ := patch(ann, `"1"`, `{"name":"","email":"ann@example.org","session":"morning"}`); r.status != 422 {
		t.Fatalf("invalid change: %d %s", r.status, r.body)
	}
	// The afternoon is Bo's: 409 naming it though the form waitlists;
	// Ann keeps her morning.
	if r, m := patch(ann, `"1"`, full); r.status != 409 || m["code"] != "capacity-reached" || m["option"] != "afternoon" {
		t.Fatalf("change to a full session: %d %s", r.status, r.body)
	}
	if r, _ := patch(ann, `"1"`, `{"name":"Ann","email":"bo@example.org","session":"morning"}`); r.status != 409 ||
		!bytes.Contains(r.body, []byte(`"duplicate-entry"`)) {
		t.Fatalf("change to another's e-mail: %d %s", r.status, r.body)
	}
	move := `{"name":"Ann B","email":"ann@example.org","session":"evening"}`
	r, m := patch(ann, `"1"`, move)
	if r.status != 200 || r.etag != `"2"` || r.changed != "true" || m["status"] != "stored" {
		t.Fatalf("change: %d %+v %s", r.status, r, r.body)
	}
	// A retry is that change again, not a second one.
	if r, _ := patch(ann, `"1"`, move); r.status != 200 || r.etag != `"2"` || r.changed != "false" || r.replayed != "true" {
		t.Fatalf("retried change: %+v %s", r, r.body)
	}
	// An older tab's change: 412 with the current version.
	if r, m := patch(ann, `"1"`, full); r.status != 412 || r.etag != `"2"` || m["version"] != float64(2) {
		t.Fatalf("stale change: %+v %s", r, r.body)
	}
	// The morning Ann left is free for someone new.
	if resp, b := send(t, c, h.URL, jsonReq("fair", "k-cy", `{"name":"Cy","email":"cy@example.org","session":"morning"}`)); resp.StatusCode != 201 ||
		!bytes.Contains(b, []byte(`"status":"stored"`)) {
		t.Fatalf("the freed morning: %d %s", resp.StatusCode, b)
	}
	// The organizer sees the earlier version.
	_, b := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + ann})
	var v struct{ ID string }
	_ = json.Unmarshal(b, &v)
	resp, b = send(t, c, h.URL, req{method: "GET", path: "/v1/admin/forms/fair/entries/" + v.ID + "/versions",
		headers: map[string]string{"Authorization": "Bearer " + h.Token}})
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"morning"`)) || !bytes.Contains(b, []byte(`"version":1`)) {
		t.Fatalf("versions: %d %s", resp.StatusCode, b)
	}
	// Exports carry the history when asked (JSON Lines), not otherwise.
	resp, b = send(t, c, h.URL, req{method: "GET", path: "/v1/admin/forms/fair/export?format=jsonl&history=1",
		headers: map[string]string{"Authorization": "Bearer " + h.Token}})
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"history":[{"version":1,"data":{"name":"Ann","email":"ann@example.org","session":"morning"},"place":"morning"`)) {
		t.Fatalf("export with history: %d %s", resp.StatusCode, b)
	}
	resp, b = send(t, c, h.URL, req{method: "GET", path: "/v1/admin/forms/fair/export?format=jsonl",
		headers: map[string]string{"Authorization": "Bearer " + h.Token}})
	if resp.StatusCode != 200 || bytes.Contains(b, []byte(`"history"`)) {
		t.Fatalf("export without history: %d %s", resp.StatusCode, b)
	}
	// A closed window.
	closed := submit("closed", "k-x", `{"name":"X"}`)
	if r, m := patch(closed, `"1"`, `{"name":"Y"}`); r.status != 409 || m["code"] != "edit-closed" {
		t.Fatalf("after edit_until: %d %s", r.status, r.body)
	}
	// Made-up links: 404 as for revoked ones.
	if r, m := patch("fair.nope.AAAAAAAAAAAAAAAAAAAAAA", `"1"`, move); r.status != 404 || m["code"] != "entry-link-not-found" {
		t.Fatalf("made-up link: %d %s", r.status, r.body)
	}
}

// TestParticipantErasure: a request waits for the organizer (202, once,
// listed for the organizer and in the audit log) and the organizer's one
// action erases it, after which the link is the same 404 as a made-up
// one; on a form with self_erase it is erased at once (200 done).
func TestParticipantErasure(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, changeForms, servertest.Options{})
	c := servertest.Client()
	submit := func(formID, key, body string) string { return linkOf(t, c, h.URL, formID, key, body) }
	auth := map[string]string{"Authorization": "Bearer " + h.Token}
	ann := submit("fair", "k-ann", `{"name":"Ann","email":"ann@example.org","session":"morning"}`)
	var first []byte
	for i := range 2 {
		resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/" + ann + "/erasure"})
		if resp.StatusCode != 202 || !bytes.Contains(b, []byte(`"erasure":"requested"`)) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		if i == 1 && !bytes.Equal(b, first) {
			t.Fatalf("a second request differs:\n%s\n%s", b, first)
		}
		first = b
	}
	resp, b := send(t, c, h.URL, req{method: "GET", path: "/v1/admin/erasure-requests", headers: auth})
	var list []struct{ Form, Entry string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &list) != nil || len(list) != 1 || list[0].Form != "fair" {
		t.Fatalf("pending requests: %d %s", resp.StatusCode, b)
	}
	resp, b = send(t, c, h.URL, req{method: "GET", path: "/v1/admin/audit-log?form=fair", headers: auth})
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte("entry.erasure-request")) {
		t.Fatalf("audit: %d %s", resp.StatusCode, b)
	}
	resp, b = send(t, c, h.URL, req{method: "POST", path: "/v1/admin/forms/fair/entries/" + list[0].Entry + "/erase", headers: auth})
	if resp.StatusCode != 200 {
		t.Fatalf("grant: %d %s", resp.StatusCode, b)
	}
	if resp, b := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + ann}); resp.StatusCode != 404 {
		t.Fatalf("the link after erasure: %d %s", resp.StatusCode, b)
	}
	if resp, b := send(t, c, h.URL, req{method: "GET", path: "/v1/admin/erasure-requests", headers: auth}); resp.StatusCode != 200 || string(bytes.TrimSpace(b)) != "[]" {
		t.Fatalf("pending after the grant: %d %s", resp.StatusCode, b)
	}
	// self_erase: at once.
	x := submit("erasable", "k-x", `{"name":"X"}`)
	if resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/" + x + "/erasure"}); resp.StatusCode != 200 ||
		!bytes.Contains(b, []byte(`"erasure":"done"`)) {
		t.Fatalf("self_erase: %d %s", resp.StatusCode, b)
	}
	if resp, _ := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + x}); resp.StatusCode != 404 {
		t.Fatalf("the link after self_erase: %d", resp.StatusCode)
	}
}

// TestParticipantLinkCORS: the SDK on a site the form lists changes
// answers cross-origin: the preflight of a PATCH with If-Match and
// Content-Type is answered, and the answers carry the origin and expose
// the version; another origin is refused (403, readable, nothing read or
// changed) as a form's endpoints refuse it; the preflight itself tells
// nothing of the token.
func TestParticipantLinkCORS(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, changeForms, servertest.Options{})
	c := servertest.Client()
	ann := linkOf(t, c, h.URL, "fair", "k-ann", `{"name":"Ann","email":"ann@example.org","session":"morning"}`)
	const site, evil = "https://fair.example.org", "https://evil.example"
	preflight := func(origin, path, method string) *http.Response {
		t.Helper()
		resp, _ := send(t, c, h.URL, req{method: "OPTIONS", path: path, headers: map[string]string{"Origin": origin,
			"Access-Control-Request-Method": method, "Access-Control-Request-Headers": "content-type,if-match"}})
		return resp
	}
	for _, tc := range []struct{ path, method string }{
		{"/v1/entries/" + ann, "PATCH"}, {"/v1/entries/" + ann, "GET"},
		{"/v1/entries/" + ann + "/cancel", "POST"}, {"/v1/entries/" + ann + "/erasure", "POST"},
	} {
		resp := preflight(site, tc.path, tc.method)
		allowed, hdrs := resp.Header.Get("Access-Control-Allow-Methods"), strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
		if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != site || !strings.Contains(allowed, tc.method) ||
			!strings.Contains(hdrs, "if-match") || !strings.Contains(hdrs, "content-type") {
			t.Fatalf("preflight of %s %s: %d %v", tc.method, tc.path, resp.StatusCode, resp.Header)
		}
	}
	patch := func(origin, ifMatch, body string) (*http.Response, []byte) {
		t.Helper()
		return send(t, c, h.URL, req{method: "PATCH", path: "/v1/entries/" + ann, ctype: "application/json", body: body,
			headers: map[string]string{"Origin": origin, "If-Match": ifMatch}})
	}
	resp, b := patch(site, `"1"`, `{"name":"Ann B","email":"ann@example.org","session":"morning"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != site || resp.Header.Get("ETag") != `"2"` ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "ETag") || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Formd-Changed") {
		t.Fatalf("PATCH from the form's site: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	// Another origin: the preflight lets the request through so that the
	// page can read its refusal, which reads and changes nothing.
	if resp := preflight(evil, "/v1/entries/"+ann, "PATCH"); resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != evil {
		t.Fatalf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	resp, b = patch(evil, `"2"`, `{"name":"Mallory","email":"ann@example.org","session":"morning"}`)
	if resp.StatusCode != 403 || !bytes.Contains(b, []byte(`"origin-not-allowed"`)) || resp.Header.Get("Access-Control-Allow-Origin") != evil ||
		resp.Header.Get("Access-Control-Expose-Headers") != "" || resp.Header.Get("ETag") != "" {
		t.Fatalf("PATCH from another origin: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	for _, r := range []req{
		{method: "GET", path: "/v1/entries/" + ann},
		{method: "POST", path: "/v1/entries/" + ann + "/cancel"},
		{method: "POST", path: "/v1/entries/" + ann + "/erasure"},
	} {
		r.headers = map[string]string{"Origin": evil}
		if resp, b := send(t, c, h.URL, r); resp.StatusCode != 403 || bytes.Contains(b, []byte("Ann")) {
			t.Fatalf("%s %s from another origin: %d %s", r.method, r.path, resp.StatusCode, b)
		}
	}
	_, b = send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + ann})
	if !bytes.Contains(b, []byte(`"name":"Ann B"`)) || !bytes.Contains(b, []byte(`"status":"stored"`)) || bytes.Contains(b, []byte(`"erasure"`)) {
		t.Fatalf("the entry after the refused requests: %s", b)
	}
	// A made-up token: the preflight is answered as any, and the page
	// reads the one 404 of every link that opens nothing.
	const madeUp = "fair.nope.AAAAAAAAAAAAAAAAAAAAAA"
	if resp := preflight(site, "/v1/entries/"+madeUp, "PATCH"); resp.StatusCode != 204 {
		t.Fatalf("preflight of a made-up link: %d", resp.StatusCode)
	}
	// A stale version from the site: the page reads the current one.
	if resp, b := patch(site, `"1"`, `{"name":"Ann C","email":"ann@example.org","session":"morning"}`); resp.StatusCode != 412 ||
		resp.Header.Get("ETag") != `"2"` || resp.Header.Get("Access-Control-Allow-Origin") != site {
		t.Fatalf("a stale PATCH from the site: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp, b = send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + madeUp, headers: map[string]string{"Origin": site}})
	if resp.StatusCode != 404 || !bytes.Contains(b, []byte(`"entry-link-not-found"`)) || resp.Header.Get("Access-Control-Allow-Origin") != site {
		t.Fatalf("a made-up link from the site: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

type httpResponse struct {
	status                  int
	etag, changed, replayed string
	body                    []byte
}

// TestParticipantPageWithoutJavaScript: every action of /e/{token} is a
// plain form: the change form shows the answers and the version, saves
// a change, shows what needs a fix and a full session on the page (the
// place kept), and the erasure form, once confirmed, records the request
// (or, with self_erase, says the data is erased); in both languages.
func TestParticipantPageWithoutJavaScript(t *testing.T) {
	t.Parallel()
	h, c, ann := startFairOfAnnAndBo(t)
	submit := func(formID, key, body string) string { return linkOf(t, c, h.URL, formID, key, body) }
	page := func(query string) string {
		t.Helper()
		resp, b := send(t, c, h.URL, req{method: "GET", path: "/e/" + ann + query})
		if resp.StatusCode != 200 || bytes.Contains(b, []byte("<script")) {
			t.Fatalf("page: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	p := page("?lang=en")
	for _, want := range []string{`action="/e/` + ann + `/change"`, `name="_version" value="1"`, `value="Ann"`, `<option value="morning" selected>`,
		"Change my answers", "Changes are possible until 2099-01-01", `action="/e/` + ann + `/erasure"`, "Ask for my data to be erased"} {
		if !strings.Contains(p, want) {
			t.Fatalf("the page lacks %q:\n%s", want, p)
		}
	}
	if p := page("?lang=zh"); !strings.Contains(p, "修改我的答案") || !strings.Contains(p, "申请删除我的数据") {
		t.Fatalf("the zh page:\n%s", p)
	}
	post := func(path, body string) (int, string, string) {
		t.Helper()
		resp, b := send(t, c, h.URL, req{method: "POST", path: path + "?lang=en", ctype: "application/x-www-form-urlencoded", body: body})
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	// What needs a fix: 422, the page again with the error and what was typed.
	if st, _, b := post("/e/"+ann+"/change", "_version=1&name=&email=ann%40example.org&session=evening"); st != 422 ||
		!strings.Contains(b, `aria-invalid="true"`) || !strings.Contains(b, `<option value="evening" selected>`) {
		t.Fatalf("invalid change: %d %s", st, b)
	}
	// A full session: 409, said on the page; the place is kept.
	if st, _, b := post("/e/"+ann+"/change", "_version=1&name=Ann&email=ann%40example.org&session=afternoon"); st != 409 ||
		!strings.Contains(b, "afternoon has no place left: nothing was changed, and your place is kept.") {
		t.Fatalf("full session: %d %s", st, b)
	}
	// A change: saved, and the page says so.
	if st, loc, b := post("/e/"+ann+"/change", "_version=1&name=Ann+B&email=ann%40example.org&session=evening"); st != 303 || loc != "/e/"+ann+"?changed=1" {
		t.Fatalf("change: %d %q %s", st, loc, b)
	}
	if p := page("?changed=1&lang=en"); !strings.Contains(p, "Your changes are saved.") || !strings.Contains(p, "<dd>Ann B</dd>") ||
		!strings.Contains(p, `name="_version" value="2"`) {
		t.Fatalf("after the change:\n%s", p)
	}
	// The same form posted again (a reload): the change is not made twice.
	if st, loc, _ := post("/e/"+ann+"/change", "_version=1&name=Ann+B&email=ann%40example.org&session=evening"); st != 303 || loc != "/e/"+ann+"?changed=0" {
		t.Fatalf("the change posted again: %d %q", st, loc)
	}
	// Erasure: unconfirmed, nothing; confirmed, the request is on the page.
	if st, _, _ := post("/e/"+ann+"/erasure", ""); st != 303 || strings.Contains(page(""), "You asked for your data to be erased") {
		t.Fatalf("an unconfirmed erasure request: %d", st)
	}
	if st, _, _ := post("/e/"+ann+"/erasure", "confirm=yes"); st != 303 || !strings.Contains(page("?lang=en"), "You asked for your data to be erased") {
		t.Fatalf("a confirmed erasure request: %d", st)
	}
	x := submit("erasable", "k-x", `{"name":"X"}`)
	if st, _, b := post("/e/"+x+"/erasure", "confirm=yes"); st != 200 || !strings.Contains(b, "Your data has been erased.") {
		t.Fatalf("self_erase from the page: %d %s", st, b)
	}
	if resp, _ := send(t, c, h.URL, req{method: "GET", path: "/e/" + x}); resp.StatusCode != 404 {
		t.Fatalf("the page after self_erase: %d", resp.StatusCode)
	}
}

// startFairOfAnnAndBo starts a server with changeForms where Ann holds a
// morning place at the fair and Bo an afternoon one, and returns it, its
// client and the token of Ann's link.
func startFairOfAnnAndBo(t *testing.T) (*servertest.Harness, *http.Client, string) {
	t.Helper()
	h := servertest.Start(t, changeForms, servertest.Options{})
	c := servertest.Client()
	ann := linkOf(t, c, h.URL, "fair", "k-ann", `{"name":"Ann","email":"ann@example.org","session":"morning"}`)
	linkOf(t, c, h.URL, "fair", "k-bo", `{"name":"Bo","email":"bo@example.org","session":"afternoon"}`)
	return h, c, ann
}

// linkOf submits to a form and returns the token of the entry's link.
func linkOf(t *testing.T, c *http.Client, base, formID, key, body string) string {
	t.Helper()
	resp, b := send(t, c, base, jsonReq(formID, key, body))
	var a struct{ Manage string }
	if resp.StatusCode != 201 || json.Unmarshal(b, &a) != nil || a.Manage == "" {
		t.Fatalf("submit %s: %d %s", key, resp.StatusCode, b)
	}
	return strings.TrimPrefix(a.Manage, "/e/")
}
