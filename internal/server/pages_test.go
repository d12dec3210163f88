package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
)

// TestHostedResultPageReadsTheStatus: the page a plain post lands on
// shows the key's status as the status endpoint reads it (the hosted
// pages and the intake wired together).
func TestHostedResultPageReadsTheStatus(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: f\nfields: [{name: name, type: text}]\n", servertest.Options{})
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/f/submissions", strings.NewReader(`{"name":"Ann"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %s", resp.Status)
	}
	for key, want := range map[string]string{"k1": "stored", "never-sent": "unknown"} {
		resp, err := http.Get(h.URL + "/f/f/done?key=" + key)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-status="`+want+`"`) {
			t.Errorf("result page of %s: %s, want status %s in\n%s", key, resp.Status, want, page)
		}
	}
}

// TestResultPageShowsTheParticipantsLink: a plain post (no JavaScript) is
// sent to the result page with its link's token; the page shows the
// participant's link, made absolute with --public-url, in the person's
// language, the same link the JSON answer gives. Whoever knows only the
// key, or brings another token, gets the status and no link.
func TestResultPageShowsTheParticipantsLink(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: f\nfields: [{name: name, type: text}]\n", servertest.Options{Config: func(c *config.Config) { c.PublicURL = "https://forms.example.org" }})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(body, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", h.URL+"/v1/forms/f/submissions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", accept)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("name=Ann&_key=plain-1", "text/html")
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "&manage=") {
		t.Fatalf("plain post: %s, Location %q", resp.Status, loc)
	}
	// The JSON answer of the same key and content: its manage member.
	resp = post("name=Ann&_key=plain-1", "application/json")
	var doc struct{ Manage string }
	json.NewDecoder(resp.Body).Decode(&doc) //nolint:errcheck // checked below
	resp.Body.Close()
	if !strings.HasPrefix(doc.Manage, "/e/") {
		t.Fatalf("the JSON answer's manage: %q", doc.Manage)
	}
	page := func(path, lang string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", h.URL+path, nil)
		req.Header.Set("Accept-Language", lang)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	link := `href="https://forms.example.org` + doc.Manage + `"`
	for lang, words := range map[string]string{"en": "My registration", "zh-CN": "我的报名"} {
		if p := page(loc, lang); !strings.Contains(p, link) || !strings.Contains(p, words) {
			t.Errorf("result page (%s) without the link %s or %q:\n%s", lang, link, words, p)
		}
	}
	for _, path := range []string{"/f/f/done?key=plain-1", "/f/f/done?key=plain-1&manage=f.someone-else.AAAA"} {
		if p := page(path, "en"); strings.Contains(p, "/e/") || !strings.Contains(p, `data-status="stored"`) {
			t.Errorf("%s shows a link, or no status:\n%s", path, p)
		}
	}
}
