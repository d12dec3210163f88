package console_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

const sessionsForm = `
id: fair-s
title: Fair with sessions
fields:
  - {name: name, type: text, required: true}
  - name: session
    type: select
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 2}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 2}
      - {value: evening}
when_full: waitlist
`

// The form's card shows each session's stored, waitlisted and places.
func TestCardShowsOptionPlaces(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, sessionsForm, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	for _, body := range []string{
		`{"name":"A","session":"morning"}`, `{"name":"B","session":"morning"}`, `{"name":"C","session":"morning"}`,
		`{"name":"D","session":"afternoon"}`, `{"name":"E","session":"evening"}`,
	} {
		submit(t, h, "fair-s", body)
	}
	code, page := b.do("GET", "/admin/forms/fair-s/card", nil)
	if code != 200 {
		t.Fatalf("card: %d", code)
	}
	row := func(option string) string {
		m := regexp.MustCompile(`<tr data-option="` + option + `"><th scope="row">([^<]+)</th><td data-count="stored">(\d+)</td><td data-count="waitlisted">(\d+)</td><td data-count="capacity">([^<]+)</td></tr>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no row for %s in the card:\n%s", option, page)
		}
		return m[1] + " " + m[2] + " " + m[3] + " " + m[4]
	}
	for option, want := range map[string]string{"morning": "Morning 2 1 2", "afternoon": "Afternoon 1 0 2", "evening": "evening 1 0 —"} {
		if got := row(option); got != want {
			t.Errorf("%s: %q, want %q (label, stored, waitlisted, places)", option, got, want)
		}
	}
}

// The proof page counts each session's entries one by one beside its
// places, and says none holds more than its places.
func TestProofCountsEachOption(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, sessionsForm, servertest.Options{})
	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	for _, body := range []string{`{"name":"A","session":"morning"}`, `{"name":"B","session":"morning"}`, `{"name":"C","session":"morning"}`, `{"name":"E","session":"evening"}`} {
		submit(t, h, "fair-s", body)
	}
	code, page := b.do("GET", "/admin/forms/fair-s/proof", nil)
	if code != 200 {
		t.Fatalf("proof: %d", code)
	}
	cells := regexp.MustCompile(`<[^>]+>`)
	for option, want := range map[string]string{"morning": "Morning 2 0 1 2 Within its places", "afternoon": "Afternoon 0 0 0 2 Within its places", "evening": "evening 1 0 0 — Within its places"} {
		m := regexp.MustCompile(`(?s)<tr data-option="` + option + `">(.*?)</tr>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no row for %s on the proof page", option)
		}
		if got := strings.Join(strings.Fields(cells.ReplaceAllString(strings.ReplaceAll(m[1], "</td>", " "), " ")), " "); got != want {
			t.Errorf("%s: %q, want %q", option, got, want)
		}
	}
}
