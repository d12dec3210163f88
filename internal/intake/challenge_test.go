package intake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

const powForms = `
id: pow
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000}
---
id: keep
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000, challenge_fallback: spam}
---
id: lenient
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000, challenge_fallback: honeypot, honeypot: website}
---
id: plain
fields: [{name: name, type: text}]
`

type powClient struct {
	t   *testing.T
	url string
	xff string
}

func (c powClient) do(method, path, ctype, body string, hdr map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if c.xff != "" {
		req.Header.Set("X-Forwarded-For", c.xff)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := servertest.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (c powClient) challenge(form string) challenge.Challenge {
	c.t.Helper()
	resp, body := c.do("GET", "/v1/forms/"+form+"/challenge", "", "", nil)
	if resp.StatusCode != 200 {
		c.t.Fatalf("challenge: %d %s", resp.StatusCode, body)
	}
	var ch challenge.Challenge
	if err := json.Unmarshal(body, &ch); err != nil {
		c.t.Fatal(err)
	}
	return ch
}

func (c powClient) solve(form string) string {
	c.t.Helper()
	p, ok := challenge.Solve(c.challenge(form))
	if !ok {
		c.t.Fatal("not solved")
	}
	return challenge.Encode(p)
}

// submit posts name (and the solution, when not "") under key; it returns
// the status and the problem code or the status document's status.
func (c powClient) submit(form, key, name, solution string) (int, string) {
	c.t.Helper()
	body := map[string]any{"name": name}
	if solution != "" {
		body["altcha"] = solution
	}
	b, _ := json.Marshal(body)
	resp, rb := c.do("POST", "/v1/forms/"+form+"/submissions", "application/json", string(b), map[string]string{"Idempotency-Key": key})
	var doc struct{ Code, Status string }
	json.Unmarshal(rb, &doc) //nolint:errcheck // checked by the caller's want
	if doc.Code != "" {
		return resp.StatusCode, doc.Code
	}
	return resp.StatusCode, doc.Status
}

func expect(t *testing.T, what string, gotStatus int, gotCode string, wantStatus int, wantCode string) {
	t.Helper()
	if gotStatus != wantStatus || gotCode != wantCode {
		t.Fatalf("%s: %d %s, want %d %s", what, gotStatus, gotCode, wantStatus, wantCode)
	}
}

// A form that refuses: a missing solution is challenge-required, a bad,
// foreign or spent one challenge-invalid; a solved one is stored once; a
// retry of its key with the same solution, or with none, is the same
// submission; a form without the challenge is untouched.
func TestChallengeRefuse(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, powForms, servertest.Options{})
	c := powClient{t: t, url: h.URL}
	s, code := c.submit("pow", "k0", "Ann", "")
	expect(t, "no solution", s, code, 400, "challenge-required")
	s, code = c.submit("pow", "k0", "Ann", "bm90IGEgc29sdXRpb24=")
	expect(t, "malformed", s, code, 403, "challenge-invalid")
	s, code = c.submit("pow", "k0", "Ann", c.solve("keep"))
	expect(t, "another form's", s, code, 403, "challenge-invalid")

	sol := c.solve("pow")
	s, code = c.submit("pow", "k1", "Ann", sol)
	expect(t, "solved", s, code, 201, "stored")
	s, code = c.submit("pow", "k1", "Ann", sol)
	expect(t, "retry, same solution", s, code, 200, "stored")
	s, code = c.submit("pow", "k1", "Ann", "")
	expect(t, "retry, no solution", s, code, 200, "stored")
	s, code = c.submit("pow", "k2", "Bo", sol)
	expect(t, "replay under a new key", s, code, 403, "challenge-invalid")
	// The replay was journaled and decided (DESIGN invariant 12): the key
	// keeps its answer, a new key with a fresh solution is stored.
	s, code = c.submit("pow", "k2", "Bo", c.solve("pow"))
	expect(t, "that key again, a fresh solution", s, code, 403, "challenge-invalid")
	s, code = c.submit("pow", "k3", "Bo", c.solve("pow"))
	expect(t, "a fresh solution, a new key", s, code, 201, "stored")
	// A bad solution is refused by intake alone: nothing journaled, the
	// key free for a good one.
	s, code = c.submit("pow", "k4", "Cy", "bm90IGEgc29sdXRpb24=")
	expect(t, "malformed, new key", s, code, 403, "challenge-invalid")
	s, code = c.submit("pow", "k4", "Cy", c.solve("pow"))
	expect(t, "the same key, solved", s, code, 201, "stored")

	s, code = c.submit("plain", "p1", "Cy", "")
	expect(t, "a form without the challenge", s, code, 201, "stored")
	resp, _ := c.do("GET", "/v1/forms/plain/challenge", "", "", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("challenge of a form without one: %d", resp.StatusCode)
	}
	resp, body := c.do("GET", "/v1/forms/pow", "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"challenge":{"url":"/v1/forms/pow/challenge","field":"altcha","fallback":"refuse"}`) {
		t.Fatalf("public definition: %d %s", resp.StatusCode, body)
	}
}

// A form that keeps: what fails is answered like a success and stored as
// spam with its reason, rescuable as any spam; the honeypot fallback lets
// a submission without a solution through to the cheap checks.
func TestChallengeKeepAsSpam(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, powForms, servertest.Options{})
	c := powClient{t: t, url: h.URL}
	ctx := context.Background()
	sol := c.solve("keep")
	for _, tc := range []struct {
		key, solution, status, reason string
	}{
		{"missing", "", "received", "challenge-missing"},
		{"garbage", "e30=", "received", "challenge-malformed"},
		{"good", sol, "stored", ""},
		{"replayed", sol, "received", "challenge-replayed"},
	} {
		s, got := c.submit("keep", tc.key, "Dee", tc.solution)
		expect(t, tc.key, s, got, 201, tc.status)
		o, ok, err := h.Server.Store.Outcome(ctx, "keep", tc.key)
		wantDecision := store.StatusSpam
		if tc.reason == "" {
			wantDecision = store.StatusStored
		}
		if err != nil || !ok || o.Decision != wantDecision {
			t.Fatalf("%s: outcome %+v %v %v, want %s", tc.key, o, ok, err, wantDecision)
		}
		if r, err := h.Server.Store.SpamReason(ctx, "keep", tc.key); r != tc.reason || err != nil {
			t.Fatalf("%s: reason %q %v, want %q", tc.key, r, err, tc.reason)
		}
	}
	s, got := c.submit("lenient", "l1", "Eve", "")
	expect(t, "honeypot fallback, no solution", s, got, 201, "stored")
	s, got = c.submit("lenient", "l2", "Eve", "e30=")
	expect(t, "honeypot fallback, a bad solution", s, got, 201, "received")
	b, _ := json.Marshal(map[string]any{"name": "Bot", "website": "http://spam.example"})
	resp, _ := c.do("POST", "/v1/forms/lenient/submissions", "application/json", string(b), map[string]string{"Idempotency-Key": "l3"})
	if r, _ := h.Server.Store.SpamReason(ctx, "lenient", "l3"); resp.StatusCode != 201 || r != "honeypot" {
		t.Fatalf("honeypot catch: %d, reason %q", resp.StatusCode, r)
	}
}

// The replay store is durable: a solution spent before a restart is
// refused after it.
func TestChallengeReplayAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := servertest.Start(t, powForms, servertest.Options{Data: dir})
	c := powClient{t: t, url: h.URL}
	sol := c.solve("pow")
	s, code := c.submit("pow", "r1", "Ann", sol)
	expect(t, "first", s, code, 201, "stored")
	h.Stop()
	h = servertest.Start(t, powForms, servertest.Options{Data: dir})
	c.url = h.URL
	s, code = c.submit("pow", "r2", "Bo", sol)
	expect(t, "after the restart, under a new key", s, code, 403, "challenge-invalid")
	s, code = c.submit("pow", "r1", "Ann", sol)
	expect(t, "after the restart, the same key", s, code, 200, "stored")
}

// A burst of challenges from one address raises its difficulty; another
// address keeps the base.
func TestChallengeBurstRaisesOneAddress(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, powForms, servertest.Options{Config: func(c *config.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	}})
	bot := powClient{t: t, url: h.URL, xff: "198.51.100.7"}
	person := powClient{t: t, url: h.URL, xff: "203.0.113.9"}
	var got []int64
	for range 25 {
		got = append(got, bot.challenge("pow").MaxNumber)
	}
	if got[0] != 1000 || got[9] != 1000 || got[10] != 2000 || got[24] != 4000 {
		t.Fatalf("difficulties under the burst: %v", got)
	}
	if d := person.challenge("pow").MaxNumber; d != 1000 {
		t.Fatalf("another address: %d, want the base 1000", d)
	}
	// A harder challenge is still a valid one.
	p, _ := challenge.Solve(bot.challenge("pow"))
	s, code := bot.submit("pow", "b1", "Bot", challenge.Encode(p))
	expect(t, "a raised challenge solved", s, code, 201, "stored")
}

// While the store cannot decide, a proof-of-work form still takes
// submissions (DESIGN invariant 12: no store call before the journal):
// 202, journaled with the verified solution, and decided once the store
// is back — a solution replayed meanwhile under another key is refused
// then, and the status document says so.
func TestChallengeStoreDown(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	h := servertest.Start(t, powForms, servertest.Options{
		// A wrapped store does not decide on the journal's writer.
		Config:    func(c *config.Config) { c.DecideAtAppend = false; c.DefaultWait = 200 * time.Millisecond },
		WrapStore: servertest.StoreDownWhile(&down),
	})
	c := powClient{t: t, url: h.URL}
	sol := c.solve("pow")
	s, code := c.submit("pow", "d1", "Ann", sol)
	expect(t, "store down", s, code, 202, "processing")
	s, code = c.submit("pow", "d2", "Bo", sol)
	expect(t, "store down, the solution replayed", s, code, 202, "processing")
	if _, found, _ := h.Server.Journal.Lookup(context.Background(), "pow", "d1"); !found {
		t.Fatal("not journaled")
	}
	down.Store(false)
	status := func(key string) string {
		_, b := c.do("GET", "/v1/forms/pow/submissions/"+key, "", "", nil)
		var doc struct{ Status string }
		json.Unmarshal(b, &doc) //nolint:errcheck // an empty status fails the poll
		return doc.Status
	}
	poll.Until(t, "both decided once the store is back", 10*time.Second, func() bool { return status("d1") == "stored" && status("d2") == "challenge-invalid" })
	s, code = c.submit("pow", "d2", "Bo", sol)
	expect(t, "the replay's retry", s, code, 403, "challenge-invalid")
	// A plain HTML post without a solution is told so, in a page.
	resp, body := c.do("POST", "/v1/forms/pow/submissions", "application/x-www-form-urlencoded", url.Values{"name": {"Ann"}}.Encode(), map[string]string{"Accept": "text/html"})
	if resp.StatusCode != 400 || !strings.Contains(string(body), "Proof-of-work required") {
		t.Fatalf("HTML post without a solution: %d %s", resp.StatusCode, body)
	}
}

// Two instances on one PostgreSQL store share the replay store: a
// solution spent on one is refused on the other, and a retry of its key on
// the other is the same submission.
func TestChallengeReplayAcrossInstances(t *testing.T) {
	t.Parallel()
	storeURL := pgtest.URL(t)
	pg := func(c *config.Config) { c.Store = storeURL }
	a := servertest.Start(t, powForms, servertest.Options{Config: pg})
	b := servertest.Start(t, powForms, servertest.Options{Config: pg})
	ca, cb := powClient{t: t, url: a.URL}, powClient{t: t, url: b.URL}
	sol := ca.solve("pow")
	s, code := ca.submit("pow", "x1", "Ann", sol)
	expect(t, "on instance A", s, code, 201, "stored")
	s, code = cb.submit("pow", "x2", "Bo", sol)
	expect(t, "the same solution on instance B, a new key", s, code, 403, "challenge-invalid")
	s, code = cb.submit("pow", "x3", "Bo", cb.solve("pow"))
	expect(t, "a fresh solution on B", s, code, 201, "stored")
}
