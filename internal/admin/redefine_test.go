package admin_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/xuri/excelize/v2"
)

// TestExportsKeepRemovedFields redefines a form three times, each time
// dropping fields that entries hold values of, and checks that every
// export format carries every value of every entry: today's fields, then
// the removed ones (headed "(removed)"), then extra.
func TestExportsKeepRemovedFields(t *testing.T) {
	t.Parallel()
	defs := []string{
		`{"id":"fair","fields":[{"name":"name","type":"text"},{"name":"phone","type":"phone","region":"CN"},{"name":"tickets","type":"number"},{"name":"slot","type":"select","options":["morning","afternoon"]}]}`,
		`{"id":"fair","fields":[{"name":"name","type":"text"},{"name":"email","type":"email"},{"name":"tickets","type":"number"},{"name":"slot","type":"select","options":["morning","afternoon"]}]}`,
		`{"id":"fair","fields":[{"name":"name","type":"text"},{"name":"email","type":"email"},{"name":"note","type":"textarea"}]}`,
		`{"id":"fair","fields":[{"name":"name","type":"text"},{"name":"city","type":"text"}]}`,
	}
	bodies := []string{
		`{"name":"Ann","phone":"13800138000","tickets":2,"slot":"morning","utm":"poster"}`,
		`{"name":"Bo","email":"bo@example.org","tickets":3,"slot":"afternoon"}`,
		`{"name":"Cy","email":"cy@example.org","note":"wheelchair"}`,
		`{"name":"Di","city":"Hangzhou"}`,
	}
	// What each entry must show, by column: today's fields, the removed
	// ones, and its extra.
	want := []map[string]string{
		{"name": "Ann", "phone (removed)": "+8613800138000", "tickets (removed)": "2", "slot (removed)": "morning", "extra": `{"utm":"poster"}`},
		{"name": "Bo", "email (removed)": "bo@example.org", "tickets (removed)": "3", "slot (removed)": "afternoon"},
		{"name": "Cy", "email (removed)": "cy@example.org", "note (removed)": "wheelchair"},
		{"name": "Di", "city": "Hangzhou"},
	}
	h := servertest.Start(t, defs[0], servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	for i, body := range bodies {
		if i > 0 {
			// Each removes or reshapes what entries hold: confirmed.
			if code, b, _ := c.do("PUT", "/v1/admin/forms?confirm="+admin.ConfirmToken([]byte(defs[i])), defs[i], true); code != 200 {
				t.Fatalf("apply definition %d: %d %s", i+1, code, b)
			}
		}
		code, b, _ := c.send("POST", "/v1/forms/fair/submissions", body, false, http.Header{"Idempotency-Key": {fmt.Sprint("k", i)}})
		if code != 201 {
			t.Fatalf("submit %d: %d %s", i, code, b)
		}
	}
	wantHead := []string{"id", "key", "status", "received_at", "name", "city", "phone (removed)", "tickets (removed)", "slot (removed)", "email (removed)", "note (removed)", "extra"}
	checkTable := func(format string, table [][]string) {
		t.Helper()
		if len(table) != len(bodies)+1 {
			t.Fatalf("%s: %d rows, want a header and %d entries: %q", format, len(table), len(bodies), table)
		}
		if got := strings.Join(table[0], "|"); got != strings.Join(wantHead, "|") {
			t.Fatalf("%s header\n got %s\nwant %s", format, got, strings.Join(wantHead, "|"))
		}
		for i, row := range table[1:] {
			for j, col := range wantHead[4:] {
				got := ""
				if 4+j < len(row) {
					got = row[4+j]
				}
				if format == "csv" {
					got = strings.TrimPrefix(got, "'") // the formula guard before "+86…"
				}
				if got != want[i][col] {
					t.Errorf("%s entry %d (%s): column %q is %q, want %q", format, i, row[1], col, got, want[i][col])
				}
			}
		}
	}
	code, body, _ := c.do("GET", "/v1/admin/forms/fair/export?format=csv", "", true)
	if code != 200 {
		t.Fatalf("csv: %d %s", code, body)
	}
	table, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	checkTable("csv", table)

	code, body, _ = c.do("GET", "/v1/admin/forms/fair/export?format=xlsx", "", true)
	if code != 200 {
		t.Fatalf("xlsx: %d %s", code, body)
	}
	x, err := excelize.OpenReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	table, err = x.GetRows("Sheet1")
	if err != nil {
		t.Fatal(err)
	}
	checkTable("xlsx", table)

	code, body, _ = c.do("GET", "/v1/admin/forms/fair/export?format=jsonl", "", true)
	if code != 200 {
		t.Fatalf("jsonl: %d %s", code, body)
	}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if len(lines) != len(bodies) {
		t.Fatalf("jsonl: %d lines, want %d", len(lines), len(bodies))
	}
	for i, l := range lines {
		var e struct {
			Data  map[string]any
			Extra map[string]any
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		for col, v := range want[i] {
			name := strings.TrimSuffix(col, " (removed)")
			var got any
			if col == "extra" {
				b, _ := json.Marshal(e.Extra)
				got = string(b)
			} else {
				got = fmt.Sprint(e.Data[name])
			}
			if got != v {
				t.Errorf("jsonl entry %d: %s is %v, want %s", i, col, got, v)
			}
		}
	}
}
