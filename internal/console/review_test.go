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
	api := func(path string) (int, string) {
		req, _ := http.NewRequest("POST", h.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+h.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
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
