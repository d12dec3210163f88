package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/client"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
)

const testForms = `
id: open
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
---
id: reject
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
capacity: 1
when_full: reject
---
id: waitlist
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
capacity: 1
when_full: waitlist
---
id: closed
closes_at: 2020-01-01T00:00:00Z
fields: [{name: name, type: text}]
---
id: async
durability: async
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
`

// phones hands out distinct, valid CN mobile numbers so that parallel
// tests sharing a form never collide.
var phoneSeq atomic.Int64

func newPhone() string { return fmt.Sprintf("1390000%04d", phoneSeq.Add(1)) }

func body(name, phone string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"phone":%q}`, name, phone))
}

// sleeps is a Clock that records the backoff instead of waiting for it.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Now() time.Time { return time.Now() }

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) longest() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m time.Duration
	for _, d := range s.d {
		m = max(m, d)
	}
	return m
}

// rows reads what the store holds for one key of a form.
func rows(t *testing.T, h *servertest.Harness, form, key string) []store.Row {
	t.Helper()
	var out []store.Row
	err := h.Server.Store.Export(context.Background(), form, func(r store.Row) error {
		if r.Key == key {
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("export %s: %v", form, err)
	}
	return out
}

func newClient(t *testing.T, url string, opts client.Options) *client.Client {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = &sleeps{}
	}
	c, err := client.New(url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every definitive answer of the API maps to its outcome, and none is
// retried.
func TestDefinitiveAnswers(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, testForms, servertest.Options{})
	type setup struct {
		body    json.RawMessage
		sameKey bool // the case's submission reuses this key
	}
	tests := []struct {
		name       string
		form       string
		before     func(phone string) []setup
		body       func(phone string) json.RawMessage
		want       client.Outcome
		wantStatus int
		replayed   bool
		code       string
	}{
		{name: "201 stored", form: "open", want: client.Stored, wantStatus: 201},
		{name: "201 waitlisted", form: "waitlist", want: client.Waitlisted, wantStatus: 201,
			before: func(string) []setup { return []setup{{body: body("first", newPhone())}} }},
		{name: "200 replayed", form: "open", want: client.Stored, wantStatus: 200, replayed: true,
			before: func(p string) []setup { return []setup{{body: body("me", p), sameKey: true}} }},
		{name: "409 duplicate-entry", form: "open", want: client.AlreadyRegistered, wantStatus: 409, code: client.CodeDuplicateEntry,
			before: func(p string) []setup {
				return []setup{{body: body("an earlier me", "+86 "+p[:3]+" "+p[3:7]+" "+p[7:])}}
			}},
		{name: "409 capacity-reached", form: "reject", want: client.Full, wantStatus: 409, code: client.CodeCapacityReached,
			before: func(string) []setup { return []setup{{body: body("first", newPhone())}} }},
		{name: "410 form-closed", form: "closed", want: client.Closed, wantStatus: 410, code: client.CodeFormClosed,
			body: func(string) json.RawMessage { return json.RawMessage(`{"name":"x"}`) }},
		{name: "422 validation-failed", form: "open", want: client.Invalid, wantStatus: 422, code: client.CodeValidationFailed,
			body: func(string) json.RawMessage { return body("me", "12345") }},
		{name: "422 idempotency-key-reused", form: "open", want: client.KeyReused, wantStatus: 422, code: client.CodeKeyReused,
			before: func(string) []setup { return []setup{{body: body("someone else", newPhone()), sameKey: true}} }},
		{name: "404 form-not-found", form: "nope", want: client.FormNotFound, wantStatus: 404, code: client.CodeFormNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var events []client.Event
			var mu sync.Mutex
			c := newClient(t, h.URL, client.Options{OnEvent: func(e client.Event) {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}})
			ctx := context.Background()
			phone := newPhone()
			key := client.NewKey()
			if tc.before != nil {
				for _, s := range tc.before(phone) {
					k := client.NewKey()
					if s.sameKey {
						k = key
					}
					if _, err := c.Submit(ctx, client.Submission{Form: tc.form, Key: k, Body: s.body}); err != nil {
						t.Fatalf("setup: %v", err)
					}
				}
			}
			b := body("me", phone)
			if tc.body != nil {
				b = tc.body(phone)
			}
			mu.Lock()
			events = nil
			mu.Unlock()
			res, err := c.Submit(ctx, client.Submission{Form: tc.form, Key: key, Body: b})
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if res.Outcome != tc.want || res.HTTPStatus != tc.wantStatus || res.Replayed != tc.replayed {
				t.Fatalf("got %s %d replayed=%v, want %s %d replayed=%v", res.Outcome, res.HTTPStatus, res.Replayed, tc.want, tc.wantStatus, tc.replayed)
			}
			if res.Attempts != 1 || res.StatusQueries != 0 {
				t.Errorf("a definitive answer took %d POSTs and %d status queries, want 1 and 0", res.Attempts, res.StatusQueries)
			}
			if tc.code != "" && (res.Problem == nil || res.Problem.Code != tc.code) {
				t.Errorf("problem %+v, want code %s", res.Problem, tc.code)
			}
			if tc.want.Live() && (res.Doc == nil || res.Doc.Key != key || res.Doc.Receipt == "") {
				t.Errorf("status document %+v does not name key %s with a receipt", res.Doc, key)
			}
			if tc.want == client.Invalid && (res.Problem == nil || len(res.Problem.Errors) == 0) {
				t.Errorf("validation problem without field errors: %+v", res.Problem)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if e.Type == client.EventBackoff {
					t.Errorf("a definitive answer was followed by a backoff: %+v", e)
				}
			}
		})
	}
}

// action is what the fault injector does with one request.
type action int

const (
	pass            action = iota
	dropRequest            // cut the connection; the server never sees it
	dropResponse           // forward, then cut the connection instead of answering
	hang                   // never answer; the server never sees it
	forwardThenHang        // forward, then never answer
	busy503                // 503 overloaded, Retry-After: 2
	limited429             // 429 rate-limited, Retry-After: 1
	fail500                // 500 without forwarding
)

// injector sits between the client and a real server and spoils the
// requests its script names, in order, per method; the rest pass.
type injector struct {
	upstream string
	hc       *http.Client
	mu       sync.Mutex
	script   map[string][]action
}

func (in *injector) next(method string) action {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := in.script[method]
	if len(s) == 0 {
		return pass
	}
	in.script[method] = s[1:]
	return s[0]
}

func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

func problemAnswer(w http.ResponseWriter, status int, code, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"/problems/%s","title":"x","status":%d,"code":%q}`, code, status, code)
}

func (in *injector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	act := in.next(r.Method)
	switch act {
	case dropRequest:
		cut(w)
		return
	case hang:
		// Read the body first: the server notices a client that gives up
		// only once the body is consumed.
		io.Copy(io.Discard, r.Body) //nolint:errcheck // test server
		<-r.Context().Done()
		return
	case busy503:
		problemAnswer(w, 503, "overloaded", "2")
		return
	case limited429:
		problemAnswer(w, 429, "rate-limited", "1")
		return
	case fail500:
		problemAnswer(w, 500, "internal-error", "")
		return
	}
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, in.upstream+r.URL.RequestURI(), r.Body)
	if err != nil {
		panic(err)
	}
	req.Header = r.Header.Clone()
	resp, err := in.hc.Do(req)
	if err != nil {
		cut(w)
		return
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		cut(w)
		return
	}
	switch act {
	case dropResponse:
		cut(w)
		return
	case forwardThenHang:
		<-r.Context().Done()
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(b) //nolint:errcheck // test server
}

// Each fault ends in the same place: the submission stored exactly once,
// with the answer it would have had without the fault, reached by the
// protocol's path (status query before a re-send, Retry-After honoured).
func TestFaultsEndStoredOnce(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, testForms, servertest.Options{})
	tests := []struct {
		name          string
		form          string
		post, get     []action
		attempts      int // exact, or -1 for "at least one"
		queries       int // exact, or -1 for "at least one"
		minBackoff    time.Duration
		wantForgotten bool
	}{
		{name: "response lost after the server stored it", form: "open", post: []action{dropResponse}, attempts: 1, queries: 1},
		{name: "request lost before the server", form: "open", post: []action{dropRequest}, attempts: 2, queries: 1},
		{name: "timeout before the server", form: "open", post: []action{hang}, attempts: 2, queries: 1},
		{name: "timeout after the server stored it", form: "open", post: []action{forwardThenHang}, attempts: 1, queries: 1},
		{name: "503 with Retry-After", form: "open", post: []action{busy503}, attempts: 2, queries: 0, minBackoff: 2 * time.Second},
		{name: "429 with Retry-After", form: "open", post: []action{limited429}, attempts: 2, queries: 0, minBackoff: time.Second},
		{name: "500 is asked about before a re-send", form: "open", post: []action{fail500}, attempts: 2, queries: 1},
		{name: "status query lost too", form: "open", post: []action{dropResponse}, get: []action{dropRequest, busy503}, attempts: 1, queries: 3, minBackoff: 2 * time.Second},
		{name: "several faults in a row", form: "open", post: []action{dropRequest, busy503, dropResponse}, get: []action{hang}, attempts: 3, queries: 3},
		{name: "202 then polled to the outcome", form: "async", attempts: -1, queries: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := &injector{upstream: h.URL, hc: &http.Client{}, script: map[string][]action{"POST": tc.post, "GET": tc.get}}
			proxy := httptest.NewServer(in)
			defer proxy.Close()
			clock := &sleeps{}
			// The attempt timeout is real time. Where the script hangs a
			// request it is what ends that attempt, so it is short but not
			// so short that a loaded machine's real answers miss it; with
			// no hang it must never fire, or the counts below are off by
			// an attempt the fault did not cause.
			timeout := 10 * time.Second
			for _, a := range append(append([]action{}, tc.post...), tc.get...) {
				if a == hang || a == forwardThenHang {
					timeout = 2 * time.Second
				}
			}
			c := newClient(t, proxy.URL, client.Options{
				AttemptTimeout: timeout,
				Wait:           -1,
				Clock:          clock,
				// Fresh connections only, so that net/http does not
				// quietly re-send a request whose kept-alive connection
				// was cut: each fault reaches the protocol under test.
				HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
			})
			sub := client.Submission{Form: tc.form, Key: client.NewKey(), Body: body("me", newPhone())}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.Submit(ctx, sub)
			if err != nil {
				t.Fatalf("Submit: %v", err)
			}
			if res.Outcome != client.Stored || !res.Acknowledged {
				t.Fatalf("outcome %s acknowledged=%v, want stored and acknowledged", res.Outcome, res.Acknowledged)
			}
			if tc.attempts >= 0 && res.Attempts != tc.attempts || res.Attempts == 0 {
				t.Errorf("%d POSTs, want %d", res.Attempts, tc.attempts)
			}
			if tc.queries >= 0 && res.StatusQueries != tc.queries || tc.queries < 0 && res.StatusQueries == 0 {
				t.Errorf("%d status queries, want %d", res.StatusQueries, tc.queries)
			}
			if got := clock.longest(); got < tc.minBackoff {
				t.Errorf("longest backoff %s, want at least the Retry-After %s", got, tc.minBackoff)
			}
			if res.Forgotten != tc.wantForgotten {
				t.Errorf("forgotten = %v", res.Forgotten)
			}
			got := rows(t, h, tc.form, sub.Key)
			if len(got) != 1 || got[0].Status != store.StatusStored {
				t.Fatalf("store holds %+v for the key, want one stored entry", got)
			}
		})
	}
}

// When the context ends before an answer, Submit says whether the server
// had acknowledged the submission, and the outbox still holds it.
func TestNotDecided(t *testing.T) {
	t.Parallel()
	// A port that refuses connections: listen, note the address, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	box, err := client.OpenOutbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var sleepsSeen atomic.Int32
	c := newClient(t, dead, client.Options{Outbox: box, OnEvent: func(e client.Event) {
		if e.Type == client.EventBackoff {
			sleepsSeen.Add(1)
		}
	}, Clock: cancelAfter(5)})
	_, err = c.Submit(context.Background(), client.Submission{Form: "open", Body: body("me", newPhone())})
	var nd *client.NotDecidedError
	if !errors.As(err, &nd) || !errors.Is(err, client.ErrNotDecided) {
		t.Fatalf("error %v, want a NotDecidedError", err)
	}
	if nd.Result.Acknowledged || nd.Result.Attempts != 5 || nd.Result.StatusQueries != 0 {
		t.Errorf("result %+v: want 5 unacknowledged POSTs and no status query (a refused connection never arrived)", nd.Result)
	}
	pending, err := box.Pending()
	if err != nil || len(pending) != 1 || pending[0].Key != nd.Result.Key {
		t.Fatalf("outbox holds %v (%v), want the undecided submission", pending, err)
	}
}

// cancelAfter is a clock whose n-th sleep reports the context as ended,
// standing in for a person who gives up after n tries.
type cancelClock struct {
	mu   sync.Mutex
	left int
}

func cancelAfter(n int) *cancelClock { return &cancelClock{left: n} }

func (c *cancelClock) Now() time.Time { return time.Now() }

func (c *cancelClock) Sleep(ctx context.Context, _ time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left--
	if c.left <= 0 {
		return context.Canceled
	}
	return ctx.Err()
}
