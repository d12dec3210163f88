package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/formd/formd/internal/poll"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const retryForm = `
id: fair
fields:
  - {name: name,  type: text,  required: true, max: 50}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
`

// apply replaces the running server's definitions and waits until it
// answers with them, as an owner's `formd forms apply` would.
func apply(t *testing.T, h *servertest.Harness, yaml string) {
	t.Helper()
	forms, err := form.Parse([]byte(yaml), "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.Server.Store.PutForms(ctx, form.Records(forms)); err != nil {
		t.Fatal(err)
	}
	if err := h.Server.Forms.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRetryGetsItsFirstOutcome: a key journaled and stored is answered with
// its first outcome whatever changed since — the form closed, a field was
// added, a bound was tightened — while a new key meets the change.
func TestRetryGetsItsFirstOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		changed string
		newCode string // what a new key gets after the change
	}{
		{"form closed", retryForm + "closes_at: 2020-01-01T00:00:00Z\n", problem.CodeFormClosed},
		{"field added", `
id: fair
fields:
  - {name: name,  type: text,  required: true, max: 50}
  - {name: phone, type: phone, required: true, region: CN}
  - {name: email, type: email, required: true}
unique: [[phone]]
`, problem.CodeValidationFailed},
		{"bound tightened", `
id: fair
fields:
  - {name: name,  type: text,  required: true, max: 3}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
`, problem.CodeValidationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, retryForm, servertest.Options{})
			c := servertest.Client()
			body := `{"name":"Li Lei","phone":"13800138000"}`
			r1, b1 := send(t, c, h.URL, jsonReq("fair", "k1", body))
			if r1.StatusCode != 201 {
				t.Fatalf("first send: %d %s", r1.StatusCode, b1)
			}
			apply(t, h, tc.changed)
			r2, b2 := send(t, c, h.URL, jsonReq("fair", "k1", body))
			if r2.StatusCode != 200 || r2.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(b1, b2) {
				t.Fatalf("retry after the change: %d %s, want 200 with the first body %s", r2.StatusCode, b2, b1)
			}
			// A plain HTML post of the same key lands on its result page.
			html := req{method: "POST", path: "/v1/forms/fair/submissions", ctype: "application/x-www-form-urlencoded",
				body:    url.Values{"name": {"Li Lei"}, "phone": {"13800138000"}, "_key": {"k1"}}.Encode(),
				headers: map[string]string{"Accept": "text/html"}}
			r3, b3 := send(t, c, h.URL, html)
			// (With the link's token of the key's entry: the result page
			// shows the participant's link to whoever the post was from.)
			if r3.StatusCode != 303 || !strings.HasPrefix(r3.Header.Get("Location"), "/f/fair/done?key=k1&manage=fair.") {
				t.Fatalf("HTML retry after the change: %d %s", r3.StatusCode, b3)
			}
			// Different content under the key is still a reused key.
			r4, b4 := send(t, c, h.URL, jsonReq("fair", "k1", `{"name":"Han Meimei","phone":"13800138001"}`))
			if r4.StatusCode != 422 || !bytes.Contains(b4, []byte(problem.CodeKeyReused)) {
				t.Fatalf("other content under the key: %d %s", r4.StatusCode, b4)
			}
			r5, b5 := send(t, c, h.URL, jsonReq("fair", "k2", `{"name":"Wang Wei","phone":"13800138002"}`))
			if code := problemCode(b5); code != tc.newCode {
				t.Fatalf("a new key after the change: %d %s, want %s", r5.StatusCode, b5, tc.newCode)
			}
		})
	}
}

// TestRetriesAreNotRateLimited: same-key retries and status queries never
// spend the client's rate limit, and a key journaled before the limit ran
// out is answered even while it is out.
func TestRetriesAreNotRateLimited(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: limited
rate_limit: {requests: 2, per: 1h, burst: 2}
fields: [{name: name, type: text}]
`, servertest.Options{})
	c := servertest.Client()
	if r, b := send(t, c, h.URL, jsonReq("limited", "k1", `{"name":"a"}`)); r.StatusCode != 201 {
		t.Fatalf("k1: %d %s", r.StatusCode, b)
	}
	for range 5 {
		if r, b := send(t, c, h.URL, jsonReq("limited", "k1", `{"name":"a"}`)); r.StatusCode != 200 {
			t.Fatalf("k1 again: %d %s", r.StatusCode, b)
		}
		if r, b := send(t, c, h.URL, req{method: "GET", path: "/v1/forms/limited/submissions/k1"}); r.StatusCode != 200 {
			t.Fatalf("status of k1: %d %s", r.StatusCode, b)
		}
	}
	if r, b := send(t, c, h.URL, jsonReq("limited", "k2", `{"name":"b"}`)); r.StatusCode != 201 {
		t.Fatalf("k2, the second new key within the limit: %d %s", r.StatusCode, b)
	}
	if r, b := send(t, c, h.URL, jsonReq("limited", "k3", `{"name":"c"}`)); r.StatusCode != 429 {
		t.Fatalf("k3, over the limit: %d %s", r.StatusCode, b)
	}
	if r, b := send(t, c, h.URL, jsonReq("limited", "k1", `{"name":"a"}`)); r.StatusCode != 200 {
		t.Fatalf("k1 while the limit is spent: %d %s", r.StatusCode, b)
	}
}

// TestResendIsTheSameSubmission: a person who presses send again with
// nothing changed (a new key, the same content) is told their first
// answer, not "already registered"; different content from the same
// participant still is a duplicate.
func TestResendIsTheSameSubmission(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, retryForm, servertest.Options{})
	c := servertest.Client()
	r1, b1 := send(t, c, h.URL, jsonReq("fair", "first", `{"name":"Li Lei","phone":"13800138000"}`))
	if r1.StatusCode != 201 {
		t.Fatalf("first: %d %s", r1.StatusCode, b1)
	}
	var first struct {
		ID, Receipt string
		ReceivedAt  string `json:"received_at"`
	}
	if err := json.Unmarshal(b1, &first); err != nil {
		t.Fatal(err)
	}
	// The resend is told the first entry's outcome, under its own key: it
	// never learns the first key, id or time (DESIGN §4), which would let
	// anyone who knows a person's answers follow that person's status.
	reveals := func(b []byte) bool {
		return bytes.Contains(b, []byte(first.ID)) || bytes.Contains(b, []byte(`"first"`)) || bytes.Contains(b, []byte(first.ReceivedAt))
	}
	r2, b2 := send(t, c, h.URL, jsonReq("fair", "second", `{"name":" Li Lei","phone":"+86 138 0013 8000"}`))
	if r2.StatusCode != 200 || r2.Header.Get("Idempotent-Replayed") != "true" || reveals(b2) ||
		!bytes.Contains(b2, []byte(`"key":"second","status":"stored"`)) || !bytes.Contains(b2, []byte(first.Receipt)) ||
		r2.Header.Get("Location") != "/v1/forms/fair/submissions/second" {
		t.Fatalf("resend: %d %s (Location %s), want 200 replaying the outcome stored under the key second", r2.StatusCode, b2, r2.Header.Get("Location"))
	}
	if r, b := send(t, c, h.URL, jsonReq("fair", "second", `{"name":"Li Lei","phone":"13800138000"}`)); r.StatusCode != 200 || !bytes.Equal(b, b2) {
		t.Fatalf("the resend's key again: %d %s, want %s byte for byte", r.StatusCode, b, b2)
	}
	if r, b := send(t, c, h.URL, req{method: "GET", path: "/v1/forms/fair/submissions/second"}); r.StatusCode != 200 || reveals(b) ||
		!bytes.Contains(b, []byte(`"key":"second","status":"stored"`)) {
		t.Fatalf("status of the resend's key: %d %s", r.StatusCode, b)
	}
	r3, b3 := send(t, c, h.URL, jsonReq("fair", "third", `{"name":"Lei Li","phone":"13800138000"}`))
	if r3.StatusCode != 409 || problemCode(b3) != problem.CodeDuplicateEntry {
		t.Fatalf("other content, same participant: %d %s", r3.StatusCode, b3)
	}
}

// TestFullFormTellsNoOneWhoIsRegistered: on a full form that turns people
// away, a registered participant's new key and an unregistered one are
// told the same (409 capacity-reached) under unique_answer generic, the
// default, both on the embedded fast path (a sync form) and through the
// processor (an async form); unique_answer duplicate tells
// duplicate-entry.
func TestFullFormTellsNoOneWhoIsRegistered(t *testing.T) {
	t.Parallel()
	forms := `
id: sync
fields: [{name: name, type: text, required: true}, {name: phone, type: phone, required: true, region: CN}]
unique: [[phone]]
capacity: 1
---
id: async
durability: async
fields: [{name: name, type: text, required: true}, {name: phone, type: phone, required: true, region: CN}]
unique: [[phone]]
capacity: 1
---
id: told
unique_answer: duplicate
fields: [{name: name, type: text, required: true}, {name: phone, type: phone, required: true, region: CN}]
unique: [[phone]]
capacity: 1
`
	h := servertest.Start(t, forms, servertest.Options{})
	c := servertest.Client()
	// answer sends a new key and waits for its decided answer.
	answer := func(formID, key, data string) (int, string) {
		t.Helper()
		r, b := send(t, c, h.URL, withHeader(jsonReq(formID, key, data), "Prefer", "wait=10"))
		if r.StatusCode == 202 {
			poll.UntilNil(t, "the decision of "+key, 10*time.Second, func() error {
				if r, b = send(t, c, h.URL, jsonReq(formID, key, data)); r.StatusCode == 202 {
					return fmt.Errorf("still processing")
				}
				return nil
			})
		}
		return r.StatusCode, problemCode(b)
	}
	for _, tc := range []struct{ form, registered string }{
		{"sync", problem.CodeCapacityReached}, {"async", problem.CodeCapacityReached}, {"told", problem.CodeDuplicateEntry},
	} {
		if st, _ := answer(tc.form, "victim", `{"name":"Li Lei","phone":"13800138000"}`); st != 201 && st != 200 {
			t.Fatalf("%s: the victim's entry: %d", tc.form, st)
		}
		st1, code1 := answer(tc.form, "probe-registered", `{"name":"x","phone":"13800138000"}`)
		st2, code2 := answer(tc.form, "probe-new", `{"name":"x","phone":"13900139000"}`)
		if st1 != 409 || code1 != tc.registered || st2 != 409 || code2 != problem.CodeCapacityReached {
			t.Errorf("%s full: a registered phone %d %s, a new one %d %s; want %s and capacity-reached", tc.form, st1, code1, st2, code2, tc.registered)
		}
		// The victim's exact content under a new key is told the outcome,
		// never the victim's key.
		r, b := send(t, c, h.URL, withHeader(jsonReq(tc.form, "probe-same", `{"name":"Li Lei","phone":"13800138000"}`), "Prefer", "wait=10"))
		if r.StatusCode == 202 {
			poll.UntilNil(t, "the resend decided", 10*time.Second, func() error {
				if r, b = send(t, c, h.URL, jsonReq(tc.form, "probe-same", `{"name":"Li Lei","phone":"13800138000"}`)); r.StatusCode == 202 {
					return fmt.Errorf("still processing")
				}
				return nil
			})
		}
		if r.StatusCode != 200 || bytes.Contains(b, []byte("victim")) || !bytes.Contains(b, []byte(`"key":"probe-same","status":"stored"`)) {
			t.Errorf("%s: the victim's content under a new key: %d %s", tc.form, r.StatusCode, b)
		}
	}
}

func problemCode(body []byte) string {
	var p struct{ Code string }
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.Code
}

// TestACrowdBehindOneAddress: with the default rate limit, 500 people
// registering in the first minute from one address (a campus, a carrier's
// NAT) are all taken.
func TestACrowdBehindOneAddress(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: crowd
fields: [{name: name, type: text, required: true}]
`, servertest.Options{Config: func(c *config.Config) { c.RateLimit = config.Default().RateLimit }})
	c := servertest.Client()
	var wg sync.WaitGroup
	var refused atomic.Int32
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				r, _ := send(t, c, h.URL, jsonReq("crowd", fmt.Sprintf("p%d", i), fmt.Sprintf(`{"name":"person %d"}`, i)))
				if r.StatusCode != 201 {
					refused.Add(1)
				}
			}
		})
	}
	for i := range 500 {
		next <- i
	}
	close(next)
	wg.Wait()
	if n := refused.Load(); n > 0 {
		t.Fatalf("%d of 500 people behind one address were refused", n)
	}
}
