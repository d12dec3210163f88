package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const checkinForms = `
id: fair
site: town
title: Town fair
checkin: true
fields:
  - {name: name,    type: text, required: true}
  - {name: email,   type: email, required: true}
  - {name: session, type: select, options: [morning, afternoon]}
unique: [[email]]
capacity: 1
when_full: waitlist
---
id: gala
site: town
checkin: true
fields:
  - {name: name, type: text}
---
id: plain
site: town
fields:
  - {name: name, type: text}
`

// door is a test's client of one instance.
type door struct {
	t     *testing.T
	h     *servertest.Harness
	token string
}

func (d door) call(method, path, key, body string) (int, map[string]any) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.h.URL+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	res, err := servertest.Client().Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &doc); err != nil {
			d.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return res.StatusCode, doc
}

// register submits an entry and returns its participant's link path.
func (d door) register(formID, key, body string) string {
	d.t.Helper()
	st, doc := d.call("POST", "/v1/forms/"+formID+"/submissions", key, body)
	if st != 201 && st != 202 {
		d.t.Fatalf("register %s: %d %v", key, st, doc)
	}
	manage, _ := doc["manage"].(string)
	if manage == "" {
		d.t.Fatalf("no manage link in %v", doc)
	}
	return manage
}

// ticketOf reads the ticket the participant's link shows ("" for none).
func (d door) ticketOf(manage string) (tk, code string) {
	d.t.Helper()
	st, doc := d.call("GET", strings.Replace(manage, "/e/", "/v1/entries/", 1), "", "")
	if st != 200 {
		d.t.Fatalf("entry %s: %d %v", manage, st, doc)
	}
	tk, _ = doc["ticket"].(string)
	code, _ = doc["ticket_code"].(string)
	return tk, code
}

func (d door) scan(formID, key, tk, doorName string) (int, map[string]any) {
	d.t.Helper()
	b, _ := json.Marshal(map[string]string{"ticket": tk, "door": doorName})
	return d.call("POST", "/v1/admin/forms/"+formID+"/checkins", key, string(b))
}

// TestCheckInAtTheDoor walks the door's rules through the API: a ticket
// only for a stored entry, shown on the participant's page; the first
// check-in 201, a later scan 200 naming it, a scan sent again its first
// answer; forged, altered and another form's tickets refused naming no
// one; a cancelled entry refused naming its status; a promoted entry let
// in; an undo audited.
func TestCheckInAtTheDoor(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, checkinForms, servertest.Options{})
	d := door{t: t, h: h, token: h.Token}
	ann := d.register("fair", "k-ann", `{"name":"Ann","email":"ann@example.org","session":"morning"}`)
	bo := d.register("fair", "k-bo", `{"name":"Bo","email":"bo@example.org","session":"afternoon"}`)
	cy := d.register("gala", "k-cy", `{"name":"Cy"}`)
	annTicket, annCode := d.ticketOf(ann)
	if !strings.HasPrefix(annTicket, "FT1.fair.") || len(annCode) != 11 || strings.Contains(annTicket, "Ann") {
		t.Fatalf("Ann's ticket %q code %q", annTicket, annCode)
	}
	if tk, _ := d.ticketOf(bo); tk != "" {
		t.Fatalf("a waitlisted entry shows a ticket: %q", tk)
	}
	// The participant's page shows the QR code and the short code.
	res, err := servertest.Client().Get(h.URL + ann)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte(annCode)) || !bytes.Contains(page, []byte(`aria-label="Your ticket `)) {
		t.Fatalf("the participant's page lacks the ticket:\n%s", page)
	}

	st, first := d.scan("fair", "scan-1", annTicket, "A")
	if st != 201 || first["result"] != "checked_in" || first["name"] != "Ann" || first["option"] != "morning" || first["door"] != "A" {
		t.Fatalf("first scan: %d %v", st, first)
	}
	if st, again := d.scan("fair", "scan-1", annTicket, "B"); st != 201 || again["checked_in_at"] != first["checked_in_at"] || again["door"] != "A" {
		t.Fatalf("the first scan sent again: %d %v, want its first answer", st, again)
	}
	if st, second := d.scan("fair", "scan-2", annCode, "B"); st != 200 || second["result"] != "already_checked_in" ||
		second["door"] != "A" || second["checked_in_at"] != first["checked_in_at"] {
		t.Fatalf("a second scan, by the typed code: %d %v", st, second)
	}
	cyTicket, _ := d.ticketOf(cy)
	mac := annTicket[strings.LastIndexByte(annTicket, '.'):]
	for _, c := range []struct{ name, tk, reason string }{
		{"another form's ticket", cyTicket, "another-form"},
		{"an altered ticket", strings.Replace(annTicket, "FT1.fair.", "FT1.gala.", 1), "forged"},
		{"a made-up ticket", "FT1.fair.00000000-0000-7000-8000-000000000000" + mac, "forged"},
		{"a code no one has", "00000-00000", "unknown-code"},
		{"not a ticket at all", "hello", "forged"},
	} {
		st, doc := d.scan("fair", "scan-"+strings.ReplaceAll(c.name, " ", "-"), c.tk, "A")
		if st != 422 || doc["code"] != problem.CodeTicketInvalid || doc["reason"] != c.reason {
			t.Errorf("%s: %d %v, want 422 ticket-invalid %s", c.name, st, doc, c.reason)
		}
		if b, _ := json.Marshal(doc); bytes.Contains(b, []byte("Cy")) || bytes.Contains(b, []byte("Ann")) {
			t.Errorf("%s names a person: %v", c.name, doc)
		}
	}
	if st, doc := d.scan("fair", "scan-2", cyTicket, "A"); st != 422 || doc["code"] != problem.CodeTicketInvalid {
		t.Errorf("a used key with another form's ticket: %d %v", st, doc)
	}
	if st, doc := d.scan("plain", "scan-p", annTicket, "A"); st != 400 {
		t.Errorf("a form without check-in: %d %v", st, doc)
	}
	if st, doc := d.call("POST", "/v1/admin/forms/fair/checkins", "", `{"ticket":"x","door":"A"}`); st != 400 || doc["code"] != problem.CodeKeyMissing {
		t.Errorf("a scan without a key: %d %v", st, doc)
	}

	// Cancelling Ann promotes Bo: Bo's ticket appears and lets Bo in;
	// Ann's is refused, naming the status.
	annID := first["entry"].(string)
	if st, doc := d.call("POST", "/v1/admin/forms/fair/entries/"+annID+"/cancel", "", ""); st != 200 {
		t.Fatalf("cancel: %d %v", st, doc)
	}
	if st, doc := d.scan("fair", "scan-3", annTicket, "A"); st != 409 || doc["code"] != problem.CodeTicketNotValidNow || doc["entry_status"] != "cancelled" {
		t.Fatalf("a cancelled entry's scan: %d %v", st, doc)
	}
	boTicket, _ := d.ticketOf(bo)
	if boTicket == "" {
		t.Fatal("the promoted entry shows no ticket")
	}
	if st, doc := d.scan("fair", "scan-4", boTicket, "B"); st != 201 || doc["name"] != "Bo" {
		t.Fatalf("the promoted entry's scan: %d %v", st, doc)
	}

	// The roster: the valid tickets, counted per option.
	st, ro := d.call("GET", "/v1/admin/forms/fair/checkins", "", "")
	opts, _ := ro["options"].(map[string]any)
	if st != 200 || ro["expected"] != 1.0 || ro["checked_in"] != 1.0 || opts["afternoon"] == nil || len(ro["tickets"].([]any)) != 1 {
		t.Fatalf("roster: %d %v", st, ro)
	}

	// Undo, audited: the next scan lets Bo in again.
	boID := ro["tickets"].([]any)[0].(map[string]any)["ticket"].(string)
	boID = strings.TrimPrefix(boID, "FT1.fair.")
	boID = boID[:strings.LastIndexByte(boID, '.')]
	if st, doc := d.call("DELETE", "/v1/admin/forms/fair/checkins/"+boID, "", ""); st != 200 {
		t.Fatalf("undo: %d %v", st, doc)
	}
	if st, doc := d.call("DELETE", "/v1/admin/forms/fair/checkins/"+boID, "", ""); st != 404 {
		t.Fatalf("undo again: %d %v", st, doc)
	}
	if st, doc := d.scan("fair", "scan-5", boTicket, "C"); st != 201 || doc["door"] != "C" {
		t.Fatalf("after the undo: %d %v", st, doc)
	}
	st, audit := d.call("GET", "/v1/admin/audit-log", "", "")
	if b, _ := json.Marshal(audit); st != 200 || !bytes.Contains(b, []byte("checkin.undo")) {
		t.Fatalf("audit log: %d %s", st, b)
	}

	// Refused tickets are counted.
	res, err = servertest.Client().Get(h.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`formd_tickets_refused_total{reason="forged"} 3`, `formd_tickets_refused_total{reason="another-form"} 2`} {
		if !bytes.Contains(m, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestDoorToken: a door token checks people in and reads the roster on
// its account's sites, and gets 403 for everything else.
func TestDoorToken(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, checkinForms, servertest.Options{})
	owner := door{t: t, h: h, token: h.Token}
	ann := owner.register("fair", "k-ann", `{"name":"Ann","email":"ann@example.org","session":"morning"}`)
	annTicket, _ := owner.ticketOf(ann)
	st, acct := owner.call("POST", "/v1/admin/accounts", "", `{"email":"vol@example.org","name":"Vol","role":"editor","sites":["town"],"password":"correct horse battery"}`)
	if st != 201 {
		t.Fatalf("account: %d %v", st, acct)
	}
	st, tok := owner.call("POST", "/v1/admin/accounts/"+acct["id"].(string)+"/tokens", "", `{"name":"door A","scope":"door"}`)
	if st != 201 || tok["scope"] != "door" {
		t.Fatalf("door token: %d %v", st, tok)
	}
	if st, doc := owner.call("POST", "/v1/admin/accounts/"+acct["id"].(string)+"/tokens", "", `{"name":"x","scope":"root"}`); st != 400 {
		t.Fatalf("an unknown scope: %d %v", st, doc)
	}
	vol := door{t: t, h: h, token: tok["token"].(string)}
	if st, doc := vol.scan("fair", "v-1", annTicket, "A"); st != 201 {
		t.Fatalf("the door token's scan: %d %v", st, doc)
	}
	if st, doc := vol.call("GET", "/v1/admin/forms/fair/checkins", "", ""); st != 200 || doc["checked_in"] != 1.0 {
		t.Fatalf("the door token's roster: %d %v", st, doc)
	}
	annID := strings.TrimPrefix(annTicket, "FT1.fair.")
	annID = annID[:strings.LastIndexByte(annID, '.')]
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/admin/forms"},
		{"GET", "/v1/admin/forms/fair/entries"},
		{"GET", "/v1/admin/forms/fair/export"},
		{"POST", "/v1/admin/forms/fair/entries/" + annID + "/cancel"},
		{"DELETE", "/v1/admin/forms/fair/checkins/" + annID},
		{"PUT", "/v1/admin/forms"},
		{"GET", "/v1/admin/accounts"},
	} {
		if st, doc := vol.call(c.method, c.path, "", ""); st != 403 || doc["code"] != problem.CodeForbidden {
			t.Errorf("door token %s %s: %d %v, want 403 forbidden", c.method, c.path, st, doc)
		}
	}
}
