package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

const reviewForm = `
id: volunteers
fields:
  - {name: name, type: text, required: true}
capacity: 1
when_full: waitlist
review: true
`

// A form with review: entries are pending; an editor approves one in the
// console, the admin API refuses to decide it again, and a decline
// through the API frees the place for the waitlist (pending in turn).
func TestReviewInConsoleAndAPI(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, reviewForm, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	resp, err := http.Post(h.URL+"/v1/forms/volunteers/submissions", "application/json", strings.NewReader(`{"name":"Ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(raw), `"status":"pending"`) {
		t.Fatalf("submit: %d %s, want 201 pending", resp.StatusCode, raw)
	}
	var first struct{ ID string }
	json.Unmarshal(raw, &first)
	second := submit(t, h, "volunteers", `{"name":"Bo"}`)
	third := submit(t, h, "volunteers", `{"name":"Cy"}`)

	if code, page := b.do("GET", "/admin/forms/volunteers/entries/"+first.ID, nil); code != 200 || !strings.Contains(page, ">Approve</button>") || !strings.Contains(page, ">Decline</button>") {
		t.Fatalf("entry page %d: no Approve and Decline for a pending entry", code)
	}
	if code, page := b.do("POST", "/admin/forms/volunteers/entries/"+first.ID+"/approve", url.Values{}); code != 200 || !strings.Contains(page, "The entry was approved.") {
		t.Fatalf("approve in the console: %d\n%s", code, page)
	}
	api := func(path string) (int, string) { return adminAPI(t, h, "POST", path, "") }
	if code, body := api("/v1/admin/forms/volunteers/entries/" + first.ID + "/decline"); code != 409 || !strings.Contains(body, `"code":"entry-not-pending"`) {
		t.Fatalf("declining an approved entry: %d %s, want 409 entry-not-pending", code, body)
	}
	// The place is taken by the approved entry: Bo and Cy wait. Cancel
	// Ann; Bo is promoted, pending; decline Bo; Cy is promoted.
	if code, body := api("/v1/admin/forms/volunteers/entries/" + first.ID + "/cancel"); code != 200 || !strings.Contains(body, second) {
		t.Fatalf("cancel: %d %s, want %s promoted", code, body, second)
	}
	if code, body := api("/v1/admin/forms/volunteers/entries/" + second + "/decline"); code != 200 || !strings.Contains(body, `"promoted":["`+third+`"]`) {
		t.Fatalf("decline: %d %s, want %s promoted", code, body, third)
	}
	if code, page := b.do("GET", "/admin/forms/volunteers/entries/"+second, nil); code != 200 || !strings.Contains(page, "declined") {
		t.Fatalf("declined entry page %d", code)
	}
	// In bulk: each entry's result, the ones decided already named.
	req, _ := http.NewRequest("POST", h.URL+"/v1/admin/forms/volunteers/review",
		strings.NewReader(`{"approve":["`+third+`","nope"],"decline":["`+second+`"]}`))
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `{"results":[{"id":"` + third + `","result":"approved"},{"id":"nope","result":"entry-not-found"},{"id":"` + second + `","result":"entry-not-pending"}]}`
	if resp.StatusCode != 200 || strings.TrimSpace(string(raw)) != want {
		t.Fatalf("bulk review: %d %s\nwant %s", resp.StatusCode, raw, want)
	}
}

const bulkReviewForm = `
id: helpers
fields:
  - {name: name, type: text, required: true}
capacity: 3
when_full: waitlist
review: true
`

// Bulk review on the submissions page, as a plain HTML form (no
// JavaScript): each pending entry has its own checkbox, "all pending on
// this page" takes the page's ids; each entry is decided once, one that
// another editor decided meanwhile is counted as such, and the batch
// goes on. A post without the CSRF token decides nothing; a viewer gets
// no boxes and is refused.
func TestBulkReviewInConsole(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, bulkReviewForm, servertest.Options{})
	b := signIn(t, h, "editor@example.org", accounts.Editor, "*")
	ann, bo, cy := submit(t, h, "helpers", `{"name":"Ann"}`), submit(t, h, "helpers", `{"name":"Bo"}`), submit(t, h, "helpers", `{"name":"Cy"}`)
	dee := submit(t, h, "helpers", `{"name":"Dee"}`) // waitlisted

	code, page := b.do("GET", "/admin/forms/helpers/submissions", nil)
	if code != 200 || !strings.Contains(page, `action="/admin/forms/helpers/review"`) || !strings.Contains(page, "Select all pending entries on this page") {
		t.Fatalf("submissions page %d: no bulk review form\n%s", code, page)
	}
	for _, id := range []string{ann, bo, cy} {
		if !strings.Contains(page, `name="id" value="`+id+`" aria-label="Select the submission received `) {
			t.Errorf("no named checkbox for pending entry %s", id)
		}
	}
	if strings.Contains(page, `name="id" value="`+dee+`"`) {
		t.Errorf("a checkbox for the waitlisted entry %s", dee)
	}

	// Another editor approves Cy through the API meanwhile.
	if code, body := adminAPI(t, h, "POST", "/v1/admin/forms/helpers/entries/"+cy+"/approve", ""); code != 200 {
		t.Fatalf("approve through the API: %d %s", code, body)
	}

	if code, _ := b.do("POST", "/admin/forms/helpers/review", url.Values{"_csrf": {"forged"}, "decision": {"approve"}, "id": {ann}}); code != 403 {
		t.Fatalf("bulk review without the CSRF token: %d, want 403", code)
	}
	if code, page := b.do("GET", "/admin/forms/helpers/entries/"+ann, nil); code != 200 || !strings.Contains(page, ">Approve</button>") {
		t.Fatalf("Ann after a forged post: %d, want still pending", code)
	}

	code, page = b.do("POST", "/admin/forms/helpers/review", url.Values{"decision": {"approve"}, "id": {ann, cy, ann}})
	if code != 200 || !strings.Contains(page, "Approved: 1.") || !strings.Contains(page, "Already decided by someone else, left as they were: 1.") ||
		!strings.Contains(page, "/entries/"+cy+`"`) {
		t.Fatalf("approve Ann and Cy: %d\n%s", code, page)
	}
	// "All pending on this page": the page showed Ann, Bo and Cy
	// pending; only Bo is left to decline, and Dee takes the place.
	code, page = b.do("POST", "/admin/forms/helpers/review", url.Values{"decision": {"decline"}, "all": {"on"}, "page": {ann, bo, cy}})
	if code != 200 || !strings.Contains(page, "Declined: 1;") || !strings.Contains(page, "left as they were: 2.") || !strings.Contains(page, dee) {
		t.Fatalf("decline all pending on the page: %d\n%s", code, page)
	}
	if code, page := b.do("POST", "/admin/forms/helpers/review", url.Values{"decision": {"approve"}}); code != 400 || !strings.Contains(page, "Select at least one pending entry") {
		t.Fatalf("bulk review of nothing: %d", code)
	}
	// Each decision is audited, by whom, once.
	_, log := adminAPI(t, h, "GET", "/v1/admin/audit-log?limit=500", "")
	var audit struct {
		Entries []struct{ Action, Target, Actor string }
	}
	if err := json.Unmarshal([]byte(log), &audit); err != nil {
		t.Fatalf("audit log: %v %s", err, log)
	}
	for _, want := range []struct {
		action, id string
		n          int
	}{{"entry.approve", ann, 1}, {"entry.approve", cy, 1}, {"entry.decline", bo, 1}, {"entry.decline", ann, 0}} {
		n := 0
		for _, e := range audit.Entries {
			if e.Action == want.action && e.Target == want.id && (e.Actor == "editor@example.org" || want.id == cy) {
				n++
			}
		}
		if n != want.n {
			t.Errorf("audit log: %d %s of %s, want %d\n%s", n, want.action, want.id, want.n, log)
		}
	}

	v := signIn(t, h, "viewer@example.org", accounts.Viewer, "*")
	submit(t, h, "helpers", `{"name":"Eve"}`)
	if _, page := v.do("GET", "/admin/forms/helpers/submissions", nil); strings.Contains(page, `action="/admin/forms/helpers/review"`) {
		t.Error("a viewer is shown the bulk review")
	}
	if code, _ := v.do("POST", "/admin/forms/helpers/review", url.Values{"decision": {"approve"}, "all": {"on"}, "page": {dee}}); code != 403 {
		t.Errorf("a viewer's bulk review: %d, want 403", code)
	}
}
