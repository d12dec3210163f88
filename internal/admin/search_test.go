package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// TestSearchFindsEverySpellingIntakeTakes feeds the admin API's ?q= (the
// console's search box calls the same Submissions) every spelling that
// the form package's normalization tests take for one participant
// (internal/form/testdata/spellings.json): each must find the entry that
// spelling would collide with at intake.
func TestSearchFindsEverySpellingIntakeTakes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../form/testdata/spellings.json")
	if err != nil {
		t.Fatal(err)
	}
	var sp struct {
		Email map[string][]string `json:"email"`
		Phone map[string][]string `json:"phone"`
	}
	if err := json.Unmarshal(raw, &sp); err != nil {
		t.Fatal(err)
	}
	h := servertest.Start(t, `
id: people
fields:
  - {name: name,  type: text}
  - {name: email, type: email}
  - {name: phone, type: phone, region: CN}
`, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	n := 0
	submit := func(field, value string) string {
		n++
		code, body, _ := c.send("POST", "/v1/forms/people/submissions", fmt.Sprintf(`{"name":"p%d",%q:%q}`, n, field, value), false,
			http.Header{"Idempotency-Key": {fmt.Sprintf("k%d", n)}})
		if code != 201 {
			t.Fatalf("submit %s %q: %d %s", field, value, code, body)
		}
		var out struct{ ID string }
		json.Unmarshal(body, &out)
		return out.ID
	}
	ids := map[string]string{}
	for canonical := range sp.Email {
		ids[canonical] = submit("email", canonical)
	}
	for canonical := range sp.Phone {
		ids[canonical] = submit("phone", canonical)
	}
	search := func(q string) []string {
		code, body, _ := c.do("GET", "/v1/admin/forms/people/submissions?q="+url.QueryEscape(q), "", true)
		if code != 200 {
			t.Fatalf("search %q: %d %s", q, code, body)
		}
		var page struct{ Entries []struct{ ID string } }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, e.ID)
		}
		return got
	}
	check := func(canonical string, spellings []string) {
		for _, s := range spellings {
			got := search(s)
			found := false
			for _, id := range got {
				found = found || id == ids[canonical]
			}
			if !found {
				t.Errorf("search %q finds %v, not the entry of %s (%s) that intake takes it for", s, got, canonical, ids[canonical])
			}
		}
	}
	for canonical, spellings := range sp.Email {
		check(canonical, append(spellings, canonical))
	}
	for canonical, spellings := range sp.Phone {
		check(canonical, append(spellings, canonical))
	}
}
