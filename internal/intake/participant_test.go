package intake_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

const linkForms = `
id: club
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
unique: [[email]]
capacity: 1
when_full: waitlist
`

// TestParticipantLink: every decided entry's first answer carries its
// link (the same on a retry), the link shows the status, the waitlist
// position, the answers and the receipt; a resend of another entry's
// content gets no link; made-up, tampered and revoked (erased) links are
// the same 404; a cancellation moves the waitlist the link shows.
func TestParticipantLink(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, linkForms, servertest.Options{})
	c := servertest.Client()
	type answer struct {
		ID, Status, Manage, Receipt string
	}
	submit := func(key, name string, want int) (answer, []byte) {
		t.Helper()
		resp, body := send(t, c, h.URL, jsonReq("club", key, `{"name":"`+name+`","email":"`+strings.ToLower(name)+`@example.org"}`))
		var a answer
		if resp.StatusCode != want || json.Unmarshal(body, &a) != nil {
			t.Fatalf("submit %s: %d %s", key, resp.StatusCode, body)
		}
		return a, body
	}
	ann, annBody := submit("k-ann", "Ann", 201)
	bo, _ := submit("k-bo", "Bo", 201)
	cy, _ := submit("k-cy", "Cy", 201)
	for _, a := range []answer{ann, bo, cy} {
		if !strings.HasPrefix(a.Manage, "/e/club.") {
			t.Fatalf("no link in the first answer: %+v", a)
		}
	}
	if _, again := submit("k-ann", "Ann", 200); !bytes.Equal(again, annBody) {
		t.Fatalf("a retry's body differs:\n%s\n%s", again, annBody)
	}
	// The same content under a new key is answered as Ann's entry, without
	// her link.
	if resend, body := submit("k-ann-again", "Ann", 200); resend.Manage != "" {
		t.Fatalf("a resend carries the link of the entry it repeats: %s", body)
	}
	view := func(manage string, want int) (map[string]any, []byte) {
		t.Helper()
		resp, body := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + strings.TrimPrefix(manage, "/e/")})
		var m map[string]any
		if resp.StatusCode != want || json.Unmarshal(body, &m) != nil {
			t.Fatalf("link %s: %d %s, want %d", manage, resp.StatusCode, body, want)
		}
		return m, body
	}
	for _, tc := range []struct {
		who      answer
		status   string
		position float64
		name     string
	}{{ann, "stored", 0, "Ann"}, {bo, "waitlisted", 1, "Bo"}, {cy, "waitlisted", 2, "Cy"}} {
		m, body := view(tc.who.Manage, 200)
		data, _ := m["data"].(map[string]any)
		if m["status"] != tc.status || m["id"] != tc.who.ID || m["receipt"] != tc.who.Receipt || data["name"] != tc.name {
			t.Fatalf("%s's link: %s", tc.name, body)
		}
		if p, _ := m["position"].(float64); p != tc.position {
			t.Fatalf("%s's position %v, want %v", tc.name, m["position"], tc.position)
		}
		if bytes.Contains(body, []byte("k-")) {
			t.Fatalf("the link shows the entry's key: %s", body)
		}
	}
	// The hosted page says the same in words, without a script, in
	// either language; a link that opens nothing is the "not found" page.
	for _, tc := range []struct{ lang, want string }{{"en", "You are number 2 on the waitlist."}, {"zh", "您在候补名单中排第 2 位。"}} {
		resp, body := send(t, c, h.URL, req{method: "GET", path: cy.Manage + "?lang=" + tc.lang})
		if resp.StatusCode != 200 || !bytes.Contains(body, []byte(tc.want)) || !bytes.Contains(body, []byte(cy.Receipt)) ||
			!bytes.Contains(body, []byte("cy@example.org")) || bytes.Contains(body, []byte("<script")) {
			t.Fatalf("the page of Cy's link (%s): %d %s", tc.lang, resp.StatusCode, body)
		}
	}
	if resp, _ := send(t, c, h.URL, req{method: "GET", path: "/e/nonsense"}); resp.StatusCode != 404 {
		t.Fatalf("the page of a made-up link: %d", resp.StatusCode)
	}
	// Ann's place goes to Bo; Cy moves up.
	admin := func(path, body string) {
		t.Helper()
		r := req{method: "POST", path: path, body: body, headers: map[string]string{"Authorization": "Bearer " + h.Token}}
		if body != "" {
			r.ctype = "application/json"
		}
		if resp, b := send(t, c, h.URL, r); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	admin("/v1/admin/forms/club/entries/"+ann.ID+"/cancel", "")
	if m, body := view(ann.Manage, 200); m["status"] != "cancelled" {
		t.Fatalf("Ann's link after the cancel: %s", body)
	}
	if m, body := view(bo.Manage, 200); m["status"] != "stored" || m["position"] != nil {
		t.Fatalf("Bo's link after the promotion: %s", body)
	}
	if m, body := view(cy.Manage, 200); m["position"] != float64(1) {
		t.Fatalf("Cy's link after the promotion: %s", body)
	}
	// Forgetting Cy revokes the link: the same 404 as a made-up one.
	admin("/v1/admin/forget", `{"email":"cy@example.org"}`)
	_, revoked := view(cy.Manage, 404)
	tampered := bo.Manage[:len(bo.Manage)-2] + "AA"
	if tampered == bo.Manage {
		tampered = bo.Manage[:len(bo.Manage)-2] + "BB"
	}
	for _, link := range []string{tampered, "/e/club.no-such-id.AAAAAAAAAAAAAAAAAAAAAA", "/e/nonsense"} {
		if _, body := view(link, 404); !bytes.Equal(body, revoked) {
			t.Fatalf("a made-up link %s is answered otherwise than a revoked one:\n%s\n%s", link, body, revoked)
		}
	}
	if !bytes.Contains(revoked, []byte(`"code":"entry-link-not-found"`)) {
		t.Fatalf("revoked: %s", revoked)
	}
}
