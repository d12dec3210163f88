package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

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
			if r3.StatusCode != 303 || r3.Header.Get("Location") != "/f/fair/done?key=k1" {
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
	r2, b2 := send(t, c, h.URL, jsonReq("fair", "second", `{"name":" Li Lei","phone":"+86 138 0013 8000"}`))
	if r2.StatusCode != 200 || r2.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(b1, b2) {
		t.Fatalf("resend: %d %s, want 200 replaying %s", r2.StatusCode, b2, b1)
	}
	if r, b := send(t, c, h.URL, jsonReq("fair", "second", `{"name":"Li Lei","phone":"13800138000"}`)); r.StatusCode != 200 || !bytes.Equal(b, b1) {
		t.Fatalf("the resend's key again: %d %s", r.StatusCode, b)
	}
	if r, b := send(t, c, h.URL, req{method: "GET", path: "/v1/forms/fair/submissions/second"}); r.StatusCode != 200 || !bytes.Contains(b, []byte(`"key":"first"`)) {
		t.Fatalf("status of the resend's key: %d %s", r.StatusCode, b)
	}
	r3, b3 := send(t, c, h.URL, jsonReq("fair", "third", `{"name":"Lei Li","phone":"13800138000"}`))
	if r3.StatusCode != 409 || problemCode(b3) != problem.CodeDuplicateEntry {
		t.Fatalf("other content, same participant: %d %s", r3.StatusCode, b3)
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
