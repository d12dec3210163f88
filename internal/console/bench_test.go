package console_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store/sqlitestore"
	_ "github.com/mattn/go-sqlite3"
)

const benchForm = `
id: big
site: s
title: A form with a million entries
fields:
  - {name: name, type: text, required: true}
  - {name: phone, type: phone, region: CN, required: true}
  - {name: email, type: email}
unique: [[phone]]
capacity: 970000
when_full: waitlist
`

// fill writes n entries of form big straight into a fresh store's file,
// in one transaction: the benchmark measures reading them, and deciding a
// million submissions one by one would take minutes. The rows are shaped
// as the store's decisions make them (97 % stored, 2 % waitlisted, 1 %
// spam; normalized phone and e-mail in the data).
func fill(b *testing.B, dir string, n int) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "store.db")
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: path}) // the schema, migrations included
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
		VALUES (?, ?, 'big', 's', ?, ?, ?, ?, ?, ?, '', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-24 * time.Hour).UnixMicro()
	fp := make([]byte, 32)
	for i := range n {
		status := "stored"
		switch {
		case i%100 == 7:
			status = "spam"
		case i%50 == 3:
			status = "waitlisted"
		}
		at := start + int64(i)*50_000 // one every 50 ms: a peak of 1,200 a minute
		data := fmt.Sprintf(`{"name":"Person %d","phone":"+8613%09d","email":"p%d@example.org"}`, i, i, i)
		if _, err := ins.Exec(fmt.Sprintf("e%07d", i), i+1, fmt.Sprintf("k%07d", i), status, status, at, at, fp, data); err != nil {
			b.Fatal(err)
		}
	}
	// The places the stored entries hold, so that applying the form
	// promotes nobody.
	if _, err := tx.Exec(`INSERT INTO capacity(form, capacity, when_full, taken) VALUES ('big', 970000, 'waitlist', 970000)`); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSubmissionsPage times the console's submissions page of a form
// with a million entries, over HTTP with a signed-in session: the first
// page, a page deep in the list (keyset), a status filter, and a search
// for a phone number written differently (bounded to 20,000 entries a
// page). Run it with
//
//	go test ./internal/console/ -run '^$' -bench SubmissionsPage -benchtime 40x -count 5
func BenchmarkSubmissionsPage(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	t0 := time.Now()
	fill(b, dir, n)
	b.Logf("filled %d entries in %s", n, time.Since(t0).Round(time.Millisecond))
	h := servertest.Start(b, benchForm, servertest.Options{Data: dir})
	if _, err := h.Server.Accounts.AddAccount(context.Background(), accounts.Operator("bench"), accounts.NewAccount{
		Email: "o@example.org", Role: accounts.Owner, Sites: []string{"*"}, Password: "correct horse battery staple"}); err != nil {
		b.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(h.URL+"/admin/login", url.Values{"email": {"o@example.org"}, "password": {"correct horse battery staple"}})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("sign in: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, bc := range []struct{ name, query, want string }{
		{"first", "", "Person 999999"},
		{"deep", "?before=500000:e0499999", "Person 499998"},
		{"status", "?status=waitlisted", "Person 999953"},
		{"search-phone", "?q=%2B86+130+0099+9000", "Person 999000"},
		{"search-recent", "?q=Person+999990", "Person 999990"},
		{"status-none", "?status=rejected", "No submissions."},
		{"forms-page", "", "A form with a million entries"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			get := func() {
				page := "/admin/forms/big/submissions" + bc.query
				if bc.name == "forms-page" {
					page = "/admin/forms" // the counts and the chart, not the submissions
				}
				resp, err := c.Get(h.URL + page)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), bc.want) {
					b.Fatalf("%s: %d, want %q:\n%.1500s", bc.query, resp.StatusCode, bc.want, body[strings.Index(string(body), "<table"):])
				}
			}
			get() // warm
			b.ResetTimer()
			for range b.N {
				get()
			}
		})
	}
}
