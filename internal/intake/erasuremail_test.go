package intake_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/sqlitedb"
)

const erasureMailForms = `
id: fair
title: Spring fair
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
notify:
  email:
    confirm: email
---
id: quick
title: Quick fair
fields:
  - {name: email, type: email, required: true}
self_erase: true
notify:
  email: {confirm: email, lang: zh}
`

// TestErasureMail: a participant asks for erasure, the organizer erases
// the entry, and exactly one mail tells them, through a real SMTP
// server, with the form and the day and nothing else of theirs; then the
// address is in no table of any database of the instance, nor anywhere
// in its files once it stops. An erasure nobody asked for (the
// organizer's forget of a person) sends nothing; a form with self_erase
// tells at once, in its language.
func TestErasureMail(t *testing.T) {
	t.Parallel()
	ms := startMailServer(t, "")
	h := servertest.Start(t, erasureMailForms, servertest.Options{Config: ms.sendThrough})
	c := servertest.Client()
	auth := map[string]string{"Authorization": "Bearer " + h.Token}
	const ann, bo, cy = "ann.erased@example.org", "bo.forgotten@example.org", "cy.later@example.org"
	annLink := linkOf(t, c, h.URL, "fair", "k-ann", `{"name":"Ann Lee","email":"`+ann+`"}`)
	linkOf(t, c, h.URL, "fair", "k-bo", `{"name":"Bo","email":"`+bo+`"}`)
	to := func(addr string) []receivedMail {
		var out []receivedMail
		for _, m := range ms.messages() {
			if len(m.to) == 1 && m.to[0] == addr {
				m.body = decodeQP(m.body)
				out = append(out, m)
			}
		}
		return out
	}
	poll.Until(t, "both confirmations", 20*time.Second, func() bool { return len(to(ann)) == 1 && len(to(bo)) == 1 })

	if resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/" + annLink + "/erasure"}); resp.StatusCode != 202 {
		t.Fatalf("request: %d %s", resp.StatusCode, b)
	}
	resp, b := send(t, c, h.URL, req{method: "GET", path: "/v1/admin/erasure-requests", headers: auth})
	var list []struct{ Entry string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &list) != nil || len(list) != 1 {
		t.Fatalf("pending requests: %d %s", resp.StatusCode, b)
	}
	before := time.Now().UTC()
	if resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/admin/forms/fair/entries/" + list[0].Entry + "/erase", headers: auth}); resp.StatusCode != 200 {
		t.Fatalf("erase: %d %s", resp.StatusCode, b)
	}
	after := time.Now().UTC()
	poll.Until(t, "the erasure's mail", 20*time.Second, func() bool { return len(to(ann)) == 2 })
	m := to(ann)[1]
	want := []string{"Your registration for \"Spring fair\" and your answers have been erased on " + before.Format("2 January 2006") + ".",
		"Your registration for \"Spring fair\" and your answers have been erased on " + after.Format("2 January 2006") + "."}
	if m.subject != "Spring fair: your data has been erased" || !strings.Contains(m.body, want[0]) && !strings.Contains(m.body, want[1]) {
		t.Fatalf("the erasure's mail: %q\n%s", m.subject, m.body)
	}
	if strings.Contains(m.body, "Ann Lee") || strings.Contains(m.body, "/e/") {
		t.Fatalf("the erasure's mail tells more than the erasure:\n%s", m.body)
	}

	// The address leaves the outbox once its delivery is finished.
	dbs, _ := filepath.Glob(filepath.Join(h.Data, "*.db"))
	if len(dbs) == 0 {
		t.Fatalf("no database in %s", h.Data)
	}
	poll.UntilNil(t, "the address gone from every table", 20*time.Second, func() error {
		for _, db := range dbs {
			if where := findInTables(t, db, ann); where != "" {
				return fmt.Errorf("%s holds it in %s", filepath.Base(db), where)
			}
		}
		return nil
	})

	// Forgetting a person who asked nothing tells them nothing: the next
	// mail sent is another's.
	if resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/admin/forget", headers: auth, ctype: "application/json",
		body: `{"email":"` + bo + `"}`}); resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"erased":1`)) {
		t.Fatalf("forget: %d %s", resp.StatusCode, b)
	}
	linkOf(t, c, h.URL, "fair", "k-cy", `{"name":"Cy","email":"`+cy+`"}`)
	poll.Until(t, "the later confirmation", 20*time.Second, func() bool { return len(to(cy)) == 1 })
	if got := to(bo); len(got) != 1 {
		t.Fatalf("mails to the forgotten person: %+v, want the confirmation alone", got)
	}
	if got := to(ann); len(got) != 2 {
		t.Fatalf("mails to the erased person: %d, want 2 (the confirmation and the erasure's)", len(got))
	}

	// self_erase: erased at the request, and told at once, in the form's
	// language.
	const dee = "dee.quick@example.org"
	deeLink := linkOf(t, c, h.URL, "quick", "k-dee", `{"email":"`+dee+`"}`)
	poll.Until(t, "the quick form's confirmation", 20*time.Second, func() bool { return len(to(dee)) == 1 })
	if resp, b := send(t, c, h.URL, req{method: "POST", path: "/v1/entries/" + deeLink + "/erasure"}); resp.StatusCode != 200 {
		t.Fatalf("self_erase: %d %s", resp.StatusCode, b)
	}
	poll.Until(t, "the self_erase mail", 20*time.Second, func() bool { return len(to(dee)) == 2 })
	if m := to(dee)[1]; m.subject != "Quick fair：您的数据已删除" || !strings.Contains(m.body, "您在“Quick fair”的报名和您的答案已于") {
		t.Fatalf("the self_erase mail: %q\n%s", m.subject, m.body)
	}

	// Nothing of it on disk once the instance stops (secure_delete, the
	// WAL checkpointed and removed).
	h.Stop()
	files, _ := os.ReadDir(h.Data)
	for _, f := range files {
		if f.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(h.Data, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, addr := range []string{ann, bo, dee} {
			if bytes.Contains(raw, []byte(addr)) {
				t.Errorf("%s still holds the erased address %s", f.Name(), addr)
			}
		}
	}
}

// findInTables names the first table and column of the SQLite database
// at path whose value holds s, or "".
func findInTables(t *testing.T, path, s string) string {
	t.Helper()
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, table := range tables {
		if where := findInTable(t, db, table, s); where != "" {
			return where
		}
	}
	return ""
}

func findInTable(t *testing.T, db *sql.DB, table, s string) string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM "` + table + `"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			var b []byte
			switch x := v.(type) {
			case []byte:
				b = x
			case string:
				b = []byte(x)
			}
			if bytes.Contains(bytes.ToLower(b), []byte(s)) {
				return table + "." + cols[i]
			}
		}
	}
	return ""
}

// decodeQP reads a body whose parts may be quoted-printable.
func decodeQP(s string) string {
	b, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(s)))
	if err != nil {
		return s
	}
	return string(b)
}
