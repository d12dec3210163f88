package intake_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
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

// TestParticipantCancel: concurrent cancels through one link cancel the
// entry once and promote exactly one waitlisted entry; a cancel of a
// cancelled entry is 200 with nothing changed; the hosted page's form
// cancels only when confirmed.
func TestParticipantCancel(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, linkForms, servertest.Options{})
	c := servertest.Client()
	links := map[string]string{}
	for _, n := range []string{"ann", "bo", "cy"} {
		resp, body := send(t, c, h.URL, jsonReq("club", "k-"+n, `{"name":"`+n+`","email":"`+n+`@example.org"}`))
		var a struct{ Manage string }
		if resp.StatusCode != 201 || json.Unmarshal(body, &a) != nil || a.Manage == "" {
			t.Fatalf("submit %s: %d %s", n, resp.StatusCode, body)
		}
		links[n] = strings.TrimPrefix(a.Manage, "/e/")
	}
	status := func(n string) (string, float64) {
		t.Helper()
		resp, body := send(t, c, h.URL, req{method: "GET", path: "/v1/entries/" + links[n]})
		var m map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(body, &m) != nil {
			t.Fatalf("%s's link: %d %s", n, resp.StatusCode, body)
		}
		p, _ := m["position"].(float64)
		return m["status"].(string), p
	}
	const n = 8
	changed := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/" + links["ann"] + "/cancel"})
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"status":"cancelled"`)) {
				t.Errorf("cancel: %d %s", resp.StatusCode, body)
			}
			changed <- resp.Header.Get("Formd-Changed")
		}()
	}
	wg.Wait()
	close(changed)
	yes := 0
	for c := range changed {
		if c == "true" {
			yes++
		}
	}
	if yes != 1 {
		t.Fatalf("%d of %d concurrent cancels say they cancelled, want 1", yes, n)
	}
	for _, want := range []struct {
		who, status string
		pos         float64
	}{{"ann", "cancelled", 0}, {"bo", "stored", 0}, {"cy", "waitlisted", 1}} {
		if s, p := status(want.who); s != want.status || p != want.pos {
			t.Fatalf("%s: %s %v, want %s %v", want.who, s, p, want.status, want.pos)
		}
	}
	// The page's form: unconfirmed, nothing happens; confirmed, Bo's
	// place goes to Cy.
	form := func(body string) {
		t.Helper()
		r := req{method: "POST", path: "/e/" + links["bo"] + "/cancel", ctype: "application/x-www-form-urlencoded", body: body}
		if resp, b := send(t, c, h.URL, r); resp.StatusCode != 303 || resp.Header.Get("Location") != "/e/"+links["bo"] {
			t.Fatalf("the page's cancel (%q): %d %s", body, resp.StatusCode, b)
		}
	}
	form("")
	if s, _ := status("bo"); s != "stored" {
		t.Fatalf("an unconfirmed cancel changed Bo: %s", s)
	}
	form("confirm=yes")
	if s, _ := status("bo"); s != "cancelled" {
		t.Fatalf("a confirmed cancel left Bo %s", s)
	}
	if s, _ := status("cy"); s != "stored" {
		t.Fatalf("Cy after Bo's cancel: %s", s)
	}
	if resp, body := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/club.nope.AAAAAAAAAAAAAAAAAAAAAA/cancel"}); resp.StatusCode != 404 {
		t.Fatalf("a made-up link's cancel: %d %s", resp.StatusCode, body)
	}
}
