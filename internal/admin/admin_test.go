package admin_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
)

const forms = `
id: club
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
unique: [[email]]
capacity: 1
when_full: waitlist
`

type client struct {
	t     *testing.T
	base  string
	token string
}

func (c client) do(method, path, body string, withToken bool) (int, []byte, http.Header) {
	c.t.Helper()
	return c.send(method, path, body, withToken, nil)
}

// send is do with extra request headers.
func (c client) send(method, path, body string, withToken bool, hdr http.Header) (int, []byte, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if withToken {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// submit registers a person under the idempotency key.
func (c client) submit(key, name, email string) {
	c.t.Helper()
	code, body, _ := c.send("POST", "/v1/forms/club/submissions", fmt.Sprintf(`{"name":%q,"email":%q}`, name, email), false,
		http.Header{"Idempotency-Key": {key}})
	if code != 201 {
		c.t.Fatalf("submit %s: %d %s", key, code, body)
	}
}

func problemCode(b []byte) string {
	var p struct{ Code string }
	json.Unmarshal(b, &p)
	return p.Code
}

func TestAdminNeedsTheToken(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	for _, tok := range []string{"", "fmd_wrong"} {
		c2 := c
		c2.token = tok
		code, body, hdr := c2.do("GET", "/v1/admin/forms", "", tok != "")
		if code != 401 || problemCode(body) != "unauthorized" || hdr.Get("WWW-Authenticate") == "" {
			t.Fatalf("token %q: %d %s", tok, code, body)
		}
	}
	code, body, _ := c.do("GET", "/v1/admin/forms", "", true)
	if code != 200 || !strings.Contains(string(body), `"id":"club"`) {
		t.Fatalf("list forms: %d %s", code, body)
	}
}

func TestApplyForms(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	code, body, _ := c.do("PUT", "/v1/admin/forms", `{"id":"new-one","fields":[{"name":"x","type":"text"}]}`, true)
	if code != 200 || !strings.Contains(string(body), `"applied":["new-one"]`) {
		t.Fatalf("apply: %d %s", code, body)
	}
	// The applying instance serves it at once.
	if code, body, _ := c.do("GET", "/v1/forms/new-one", "", false); code != 200 {
		t.Fatalf("new form: %d %s", code, body)
	}
	code, body, _ = c.do("PUT", "/v1/admin/forms", "id: bad\nfields: [{name: x, type: txt}]\n", true)
	if code != 422 || problemCode(body) != "invalid-form-definition" || !strings.Contains(string(body), `type \"txt\" is not valid`) {
		t.Fatalf("bad definition: %d %s", code, body)
	}
}

// TestApplyFormsAsksConfirmation: PUT /v1/admin/forms does not apply a
// change that reaches entries already collected (places of a form with
// entries) without the plan's token: 409 confirmation-required naming
// the risk and the fix, nothing changed; with ?confirm= it applies; a
// change that reaches no entry needs none.
func TestApplyFormsAsksConfirmation(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	c.submit("a", "Ann", "ann@example.org")
	two := strings.Replace(forms, "capacity: 1", "capacity: 2", 1)
	code, body, _ := c.do("PUT", "/v1/admin/forms", two, true)
	if code != 409 || problemCode(body) != "confirmation-required" || !strings.Contains(string(body), "changes capacity (1 → 2) of a form with 1 entries") {
		t.Fatalf("apply without confirm: %d %s", code, body)
	}
	token := regexp.MustCompile(`confirm=([0-9a-f]+)`).FindStringSubmatch(string(body))
	if token == nil {
		t.Fatalf("no token in %s", body)
	}
	if _, def, _ := c.do("GET", "/v1/admin/forms/club/definition", "", true); !strings.Contains(string(def), "capacity: 1") {
		t.Fatalf("changed without confirmation: %s", def)
	}
	if code, body, _ := c.do("PUT", "/v1/admin/forms?confirm=0123", two, true); code != 409 || problemCode(body) != "confirmation-required" {
		t.Fatalf("a wrong token: %d %s", code, body)
	}
	if code, body, _ := c.do("PUT", "/v1/admin/forms?confirm="+token[1], two, true); code != 200 {
		t.Fatalf("apply with the token: %d %s", code, body)
	}
	if _, def, _ := c.do("GET", "/v1/admin/forms/club/definition", "", true); !strings.Contains(string(def), "capacity: 2") {
		t.Fatalf("not applied: %s", def)
	}
	// A label changed reaches no entry: applied at once.
	if code, body, _ := c.do("PUT", "/v1/admin/forms", strings.Replace(two, "type: text,", "type: text, label: Name,", 1), true); code != 200 {
		t.Fatalf("a label: %d %s", code, body)
	}
}

// TestExportForPeople: ?for=people gives the organizer's table (issue
// 34): a BOM, headings and statuses in the language's words, times in
// the zone asked for to the second; a zone or a link validity that is
// not one is refused, and JSON Lines stay the machine format.
func TestExportForPeople(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	c.submit("a", "Ann", "ann@example.org")
	c.submit("b", "Bo", "bo@example.org") // waitlisted
	code, body, _ := c.do("GET", "/v1/admin/forms/club/export?format=csv&for=people&lang=zh&tz=Asia/Shanghai&link_ttl=7d", "", true)
	if code != 200 || !strings.HasPrefix(string(body), "\uFEFF") {
		t.Fatalf("export: %d %q", code, body)
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(body), "\uFEFF"))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %v %q", err, body)
	}
	if got := strings.Join(rows[0], "|"); got != "编号|状态|提交时间 (Asia/Shanghai)|name|email|其他内容" {
		t.Errorf("header %q", got)
	}
	if rows[1][1] != "已收到" || rows[2][1] != "候补" {
		t.Errorf("statuses %q %q", rows[1][1], rows[2][1])
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`).MatchString(rows[1][2]) {
		t.Errorf("time %q: want the zone's wall clock to the second", rows[1][2])
	}
	for _, q := range []string{"tz=Mars/Olympus", "link_ttl=30d", "link_ttl=soon"} {
		if code, body, _ := c.do("GET", "/v1/admin/forms/club/export?format=csv&for=people&"+q, "", true); code != 400 || problemCode(body) != "invalid-request" {
			t.Errorf("%s: %d %s", q, code, body)
		}
	}
	code, body, _ = c.do("GET", "/v1/admin/forms/club/export?format=jsonl&for=people&lang=zh&tz=Asia/Shanghai", "", true)
	if code != 200 || !strings.Contains(string(body), `"status":"stored"`) || strings.Contains(string(body), "已收到") || strings.HasPrefix(string(body), "\uFEFF") {
		t.Errorf("jsonl for people is not the machine format: %s", body)
	}
}

func TestExportCancelAndPromote(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{})
	c := client{t: t, base: h.URL, token: h.Token}
	c.submit("a", "Ann", "ann@example.org")
	c.submit("b", "=cmd|' /C calc'!A0", "bo@example.org") // waitlisted; a formula in the name
	code, body, hdr := c.do("GET", "/v1/admin/forms/club/export?format=csv", "", true)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s", code, body)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv %v %q", err, body)
	}
	if rows[1][1] != "a" || rows[1][2] != "stored" {
		t.Fatalf("first row %q: want key a, stored", rows[1])
	}
	if rows[2][1] != "b" || rows[2][2] != "waitlisted" || !strings.HasPrefix(rows[2][4], "'=") {
		t.Fatalf("second row %q: want key b, waitlisted, with the formula neutralized", rows[2])
	}
	first := rows[1][0]
	code, body, _ = c.do("POST", "/v1/admin/forms/club/entries/"+first+"/cancel", "", true)
	if code != 200 || !strings.Contains(string(body), `"promoted":["`+rows[2][0]+`"]`) {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if code, body, _ := c.do("POST", "/v1/admin/forms/club/entries/"+first+"/cancel", "", true); code != 409 || problemCode(body) != "entry-not-live" {
		t.Fatalf("cancel twice: %d %s", code, body)
	}
	if code, body, _ := c.do("POST", "/v1/admin/forms/club/entries/nope/cancel", "", true); code != 404 || problemCode(body) != "entry-not-found" {
		t.Fatalf("cancel unknown: %d %s", code, body)
	}
	if code, body, _ := c.do("GET", "/v1/admin/forms/club/export?format=pdf", "", true); code != 400 {
		t.Fatalf("bad format: %d %s", code, body)
	}
	if code, _, _ := c.do("GET", "/v1/admin/forms/nope/export", "", true); code != 404 {
		t.Fatalf("unknown form: %d", code)
	}
}

// poisonStore refuses to decide one key, as a store would refuse a row it
// cannot hold, until it is told the problem is fixed.
type poisonStore struct {
	server.Store
	fixed atomic.Bool
}

func (p *poisonStore) Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error) {
	for _, s := range subs {
		if s.Key == "poison" && !p.fixed.Load() {
			return nil, errors.New("row too large")
		}
	}
	return p.Store.Apply(ctx, subs)
}

func TestDeadLetterRetry(t *testing.T) {
	t.Parallel()
	ps := &poisonStore{}
	h := servertest.Start(t, forms, servertest.Options{
		WrapStore: func(s server.Store) server.Store { ps.Store = s; return ps },
		// The poison is in Apply, the processor's path.
		Config: func(c *config.Config) { c.DecideAtAppend = false },
	})
	c := client{t: t, base: h.URL, token: h.Token}
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/club/submissions", strings.NewReader(`{"name":"P","email":"p@example.org"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "poison")
	req.Header.Set("Prefer", "respond-async")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("submit: %v %v", resp, err)
	}
	resp.Body.Close()
	var dls struct {
		DeadLetters []store.DeadLetter `json:"dead_letters"`
	}
	poll.Until(t, "the entry to be dead-lettered", 15*time.Second, func() bool {
		_, body, _ := c.do("GET", "/v1/admin/dead-letters", "", true)
		json.Unmarshal(body, &dls)
		return len(dls.DeadLetters) == 1
	})
	if dl := dls.DeadLetters[0]; dl.Key != "poison" || dl.Reason == "" {
		t.Fatalf("dead letter %+v", dl)
	}
	ps.fixed.Store(true)
	if code, body, _ := c.do("POST", "/v1/admin/dead-letters/club/poison/retry", "", true); code != 200 {
		t.Fatalf("retry: %d %s", code, body)
	}
	code, body, _ := c.do("GET", "/v1/forms/club/submissions/poison", "", false)
	if code != 200 || !strings.Contains(string(body), `"status":"stored"`) {
		t.Fatalf("after retry: %d %s", code, body)
	}
	if code, body, _ := c.do("POST", "/v1/admin/dead-letters/club/poison/retry", "", true); code != 404 {
		t.Fatalf("retry of a stored entry: %d %s", code, body)
	}
}

// lockedStore fails writes of form definitions as a locked or full
// database does.
type lockedStore struct {
	server.Store
	locked atomic.Bool
}

func (l *lockedStore) PutForms(ctx context.Context, forms []form.Record) error {
	if l.locked.Load() {
		return fmt.Errorf("put forms: %w: database is locked", store.ErrUnavailable)
	}
	return l.Store.PutForms(ctx, forms)
}

func (l *lockedStore) PublishForms(ctx context.Context, forms []form.Record, note store.FormNote) error {
	if l.locked.Load() {
		return fmt.Errorf("publish forms: %w: database is locked", store.ErrUnavailable)
	}
	return l.Store.PublishForms(ctx, forms, note)
}

// TestApplyFormsWhenTheStoreCannotWrite: 503 with Retry-After, not 500:
// the owner can simply try again.
func TestApplyFormsWhenTheStoreCannotWrite(t *testing.T) {
	t.Parallel()
	ls := &lockedStore{}
	h := servertest.Start(t, forms, servertest.Options{
		WrapStore: func(s server.Store) server.Store { ls.Store = s; return ls },
		Config:    func(c *config.Config) { c.DecideAtAppend = false }, // the wrapper has no store.TxApplier
	})
	ls.locked.Store(true)
	c := client{t: t, base: h.URL, token: h.Token}
	code, body, hdr := c.do("PUT", "/v1/admin/forms", `{"id":"new-one","fields":[{"name":"x","type":"text"}]}`, true)
	if code != 503 || problemCode(body) != "store-unavailable" || hdr.Get("Retry-After") == "" {
		t.Fatalf("apply with the store locked: %d %s %v", code, body, hdr)
	}
}

// TestLongExportToASlowReader: an export streams for as long as the
// reader keeps reading, beyond the server's write timeout.
func TestLongExportToASlowReader(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) { c.WriteTimeout = time.Second }})
	ctx := context.Background()
	const n = 100000
	batch := make([]journal.Entry, 0, 1000)
	for i := range n {
		batch = append(batch, journal.Entry{Seq: uint64(i + 1), ID: fmt.Sprintf("id-%06d", i), Site: "default", Form: "club", Key: fmt.Sprintf("k%d", i),
			ReceivedAt: time.Now(), Data: []byte(fmt.Sprintf(`{"name":"Person number %d with a long enough name","email":"p%d@example.org"}`, i, i))})
		if len(batch) == cap(batch) {
			if _, err := h.Server.Store.Apply(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	req, _ := http.NewRequest("GET", h.URL+"/v1/admin/forms/club/export?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+h.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	// A reader slower than the write timeout: the server's writes block
	// on a full socket meanwhile.
	time.Sleep(2500 * time.Millisecond) // the slowness itself, not a wait for something
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the export was cut after %d bytes: %v", len(head)+len(rest), err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(head) + string(rest))).ReadAll()
	if err != nil || len(rows) != n+1 {
		t.Fatalf("%d rows (%v), want %d and a header", len(rows), err, n)
	}
}
