package intake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const apiForms = `
id: fair
title: Fair
fields:
  - {name: name,    type: text,   required: true, max: 50}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
unique: [[phone]]
capacity: 2
when_full: waitlist
spam: {honeypot: website, min_seconds: 2}
origins: [https://fair.example.org]
---
id: tiny
fields: [{name: email, type: email, required: true}]
unique: [[email]]
capacity: 1
when_full: reject
---
id: strict
require_key: true
fields: [{name: name, type: text, required: true}]
---
id: closed
closes_at: 2020-01-01T00:00:00Z
fields: [{name: name, type: text}]
---
id: future
opens_at: 2999-01-01T00:00:00Z
fields: [{name: name, type: text}]
---
id: limited
rate_limit: {requests: 2, per: 1m, burst: 2}
fields: [{name: name, type: text}]
---
id: busy
fields: [{name: name, type: text}]
---
id: broken
fields: [{name: name, type: text}]
---
id: slow
fields: [{name: name, type: text}]
`

// faultyJournal refuses appends for two forms, as a full queue and a
// failing disk would: faults the real journal cannot be made to produce on
// demand.
type faultyJournal struct{ journal.Journal }

func (f faultyJournal) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	switch e.Form {
	case "busy":
		return journal.Appended{}, journal.ErrOverloaded
	case "broken":
		return journal.Appended{}, fmt.Errorf("%w: disk I/O error", journal.ErrUnavailable)
	}
	return f.Journal.Append(ctx, e, sync)
}

// slowJournal hands out nothing for the form "slow", so its entries stay
// undecided and the wait runs out.
type slowJournal struct{ faultyJournal }

func (s slowJournal) Fetch(ctx context.Context, max int) ([]journal.Entry, error) {
	for {
		got, err := s.faultyJournal.Fetch(ctx, max)
		if err != nil {
			return got, err
		}
		kept := got[:0]
		for _, e := range got {
			if e.Form != "slow" {
				kept = append(kept, e)
			}
		}
		if len(kept) > 0 {
			return kept, nil
		}
	}
}

type req struct {
	method, path string
	ctype        string
	body         string
	headers      map[string]string
}

type scenario struct {
	name    string
	setup   []req // sent first; the last answer's body is kept as "first"
	req     req
	status  int
	code    string            // problem code, for error answers
	headers map[string]string // "" means: must be present, any value
	absent  []string          // headers that must not be sent
	// sameAsFirst: the body must be byte-for-byte the last setup answer's.
	sameAsFirst bool
	notInBody   []string
	check       func(t *testing.T, resp *http.Response, body []byte)
}

func jsonReq(form, key, body string) req {
	r := req{method: "POST", path: "/v1/forms/" + form + "/submissions", ctype: "application/json", body: body, headers: map[string]string{}}
	if key != "" {
		r.headers["Idempotency-Key"] = key
	}
	return r
}

func withHeader(r req, k, v string) req {
	h := map[string]string{}
	for a, b := range r.headers {
		h[a] = b
	}
	h[k] = v
	r.headers = h
	return r
}

func person(name, phone string) string {
	return fmt.Sprintf(`{"name":%q,"phone":%q,"tickets":1}`, name, phone)
}

func statusField(want string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, _ *http.Response, body []byte) {
		var doc map[string]string
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("body is not a status document: %v: %s", err, body)
		}
		for _, k := range []string{"id", "form", "key", "status", "received_at", "receipt"} {
			if doc[k] == "" {
				t.Errorf("status document lacks %q: %s", k, body)
			}
		}
		if doc["status"] != want {
			t.Errorf("status %q, want %q", doc["status"], want)
		}
	}
}

func multipartBody(fields map[string]string, file bool) (string, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if file {
		w, _ := mw.CreateFormFile("cv", "cv.pdf")
		w.Write([]byte("%PDF"))
	}
	mw.Close()
	return buf.String(), mw.FormDataContentType()
}

// TestAPIScenarios covers every answer of the submission API (each HTTP
// status and problem code the API table of docs/api.md lists) against a real
// instance, in order (later rows build on earlier ones).
func TestAPIScenarios(t *testing.T) {
	h := servertest.Start(t, apiForms, servertest.Options{
		WrapJournal: func(j journal.Journal) journal.Journal { return slowJournal{faultyJournal{j}} },
		// The wrappers hide the fast path (journal.AppendDecider): every
		// entry goes through the processor.
		Config: func(c *config.Config) { c.MaxBody = 4096; c.DefaultWait = 5 * time.Second; c.DecideAtAppend = false },
	})
	mp, mpType := multipartBody(map[string]string{"name": "Multi Part", "phone": "13900000007", "_key": "mp-1"}, false)
	mpFile, mpFileType := multipartBody(map[string]string{"name": "With File"}, true)
	scenarios := []scenario{
		{name: "201 stored", req: jsonReq("fair", "k-stored", person("Ann", "13800000001")), status: 201,
			headers: map[string]string{"Location": "/v1/forms/fair/submissions/k-stored", "Content-Type": "application/json", "Idempotency-Key": "k-stored"},
			absent:  []string{"Idempotent-Replayed"}, check: statusField("stored")},
		{name: "200 replay of a stored key, byte-for-byte",
			setup: []req{jsonReq("fair", "k-replay", person("Bo", "13800000002"))},
			req:   jsonReq("fair", "k-replay", person("Bo", "13800000002")), status: 200, sameAsFirst: true,
			headers: map[string]string{"Idempotent-Replayed": "true", "Location": "/v1/forms/fair/submissions/k-replay"}},
		{name: "replay with the same number written differently is the same content",
			req:    jsonReq("fair", "k-replay", `{"name":" Bo ","phone":"+86 138 0000 0002","tickets":"1"}`),
			status: 200, headers: map[string]string{"Idempotent-Replayed": "true"}},
		{name: "201 waitlisted once the places are taken", req: jsonReq("fair", "k-wait", person("Cy", "13800000003")), status: 201,
			check: statusField("waitlisted")},
		{name: "409 duplicate-entry for the same person with a new key, without personal data",
			req: jsonReq("fair", "k-dup", person("Ann again", "+86 138-0000-0001")), status: 409, code: problem.CodeDuplicateEntry,
			notInBody: []string{"13800000001", "Ann"}, absent: []string{"Idempotent-Replayed"}},
		{name: "409 replayed with the same header",
			req: jsonReq("fair", "k-dup", person("Ann again", "+86 138-0000-0001")), status: 409, code: problem.CodeDuplicateEntry,
			headers: map[string]string{"Idempotent-Replayed": "true"}},
		{name: "409 capacity-reached", setup: []req{jsonReq("tiny", "t1", `{"email":"a@example.org"}`)},
			req: jsonReq("tiny", "t2", `{"email":"b@example.org"}`), status: 409, code: problem.CodeCapacityReached},
		{name: "422 idempotency-key-reused", req: jsonReq("fair", "k-stored", person("Someone Else", "13800000009")),
			status: 422, code: problem.CodeKeyReused},
		{name: "422 validation-failed with per-field errors", req: jsonReq("fair", "k-bad", `{"name":"","phone":"12","tickets":9}`),
			status: 422, code: problem.CodeValidationFailed, check: func(t *testing.T, _ *http.Response, body []byte) {
				var p problem.Problem
				json.Unmarshal(body, &p)
				got := map[string]string{}
				for _, e := range p.Errors {
					got[e.Field] = e.Code
				}
				if got["name"] != "required" || got["phone"] != "invalid-phone" || got["tickets"] != "too-large" {
					t.Errorf("field errors %v", got)
				}
			}},
		{name: "400 malformed JSON", req: jsonReq("fair", "k-x", `{"name":`), status: 400, code: problem.CodeInvalidRequest},
		{name: "400 a JSON array is not a submission", req: jsonReq("fair", "k-x", `[1,2]`), status: 400, code: problem.CodeInvalidRequest},
		{name: "400 bad key", req: jsonReq("fair", "bad key with spaces", person("Dee", "13800000004")), status: 400, code: problem.CodeInvalidRequest},
		{name: "400 key too long", req: jsonReq("fair", strings.Repeat("k", 256), person("Dee", "13800000004")), status: 400, code: problem.CodeInvalidRequest},
		{name: "an RFC 8941 quoted key is unquoted", req: jsonReq("tiny", `"q\"uoted"`, `{"email":"q@example.org"}`), status: 409,
			code: problem.CodeCapacityReached, check: func(t *testing.T, _ *http.Response, body []byte) {
				if !strings.Contains(string(body), `"key":"q\"uoted"`) {
					t.Errorf("the quoted key was not unquoted: %s", body)
				}
			}},
		{name: "400 idempotency-key-missing", req: jsonReq("strict", "", `{"name":"x"}`), status: 400, code: problem.CodeKeyMissing},
		{name: "201 with the _key field", req: jsonReq("strict", "", `{"name":"x","_key":"field-key"}`), status: 201,
			headers: map[string]string{"Idempotency-Key": "field-key"}},
		{name: "404 form-not-found", req: jsonReq("nope", "k", `{}`), status: 404, code: problem.CodeFormNotFound},
		{name: "410 form-closed after closes_at", req: jsonReq("closed", "k", `{"name":"x"}`), status: 410, code: problem.CodeFormClosed},
		{name: "410 form-closed before opens_at", req: jsonReq("future", "k", `{"name":"x"}`), status: 410, code: problem.CodeFormClosed},
		{name: "413 payload-too-large", req: jsonReq("fair", "k-big", `{"name":"`+strings.Repeat("x", 5000)+`"}`), status: 413, code: problem.CodePayloadTooLarge},
		{name: "415 text/plain", req: req{method: "POST", path: "/v1/forms/fair/submissions", ctype: "text/plain", body: "hi"}, status: 415, code: problem.CodeUnsupportedMediaType},
		{name: "415 a file upload", req: req{method: "POST", path: "/v1/forms/strict/submissions", ctype: mpFileType, body: mpFile}, status: 415, code: problem.CodeUnsupportedMediaType},
		{name: "201 multipart with _key", req: req{method: "POST", path: "/v1/forms/fair/submissions", ctype: mpType, body: mp}, status: 201,
			headers: map[string]string{"Idempotency-Key": "mp-1"}, check: statusField("waitlisted")},
		{name: "201 urlencoded", req: req{method: "POST", path: "/v1/forms/limited/submissions", ctype: "application/x-www-form-urlencoded",
			body: url.Values{"name": {"Url Encoded"}, "_key": {"ue-1"}}.Encode()}, status: 201},
		{name: "429 rate-limited with Retry-After",
			setup: []req{jsonReq("limited", "r1", `{"name":"a"}`)},
			req:   jsonReq("limited", "r2", `{"name":"b"}`), status: 429, code: problem.CodeRateLimited, headers: map[string]string{"Retry-After": ""}},
		{name: "503 overloaded with Retry-After", req: jsonReq("busy", "k", `{"name":"x"}`), status: 503, code: problem.CodeOverloaded,
			headers: map[string]string{"Retry-After": "1"}},
		{name: "503 journal-unavailable with Retry-After", req: jsonReq("broken", "k", `{"name":"x"}`), status: 503, code: problem.CodeJournalUnavailable,
			headers: map[string]string{"Retry-After": ""}},
		{name: "202 respond-async", req: withHeader(jsonReq("slow", "s1", `{"name":"x"}`), "Prefer", "respond-async"), status: 202,
			headers: map[string]string{"Preference-Applied": "respond-async", "Location": "/v1/forms/slow/submissions/s1", "Retry-After": ""},
			check:   statusField("processing")},
		{name: "202 when the wait runs out, with Preference-Applied", req: withHeader(jsonReq("slow", "s2", `{"name":"y"}`), "Prefer", "wait=1"), status: 202,
			headers: map[string]string{"Preference-Applied": "wait=1", "Location": "/v1/forms/slow/submissions/s2", "Retry-After": ""}},
		{name: "Prefer: wait is capped by the server", req: withHeader(jsonReq("fair", "k-cap", person("Eve", "13800000005")), "Prefer", "wait=3600"), status: 201,
			headers: map[string]string{"Preference-Applied": "wait=30"}},
		{name: "a Prefer wait that is not a number is ignored", req: withHeader(jsonReq("fair", "k-pref", person("Fay", "13800000006")), "Prefer", "wait=soon"),
			status: 201, absent: []string{"Preference-Applied"}},
		{name: "Prefer: wait=NaN is ignored, not echoed", req: withHeader(jsonReq("fair", "k-nan", person("Fen", "13800000016")), "Prefer", "wait=NaN"),
			status: 201, absent: []string{"Preference-Applied"}},
		{name: "spam is answered like a success, without claiming it was stored", req: jsonReq("fair", "k-spam", `{"name":"Bot","phone":"13800000077","website":"http://spam.example"}`),
			status: 201, check: statusField("received")},
		{name: "GET status of spam says received, not stored", req: req{method: "GET", path: "/v1/forms/fair/submissions/k-spam"}, status: 200, check: statusField("received")},
		{name: "arrival reports are taken", req: req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json",
			body: fmt.Sprintf(`{"events":[{"key":"0b8f4f52-3f3e-4c1a-9d57-2a4e8f1f6c01","type":"started","at":%d},{"key":"0b8f4f52-3f3e-4c1a-9d57-2a4e8f1f6c01","type":"answered","at":%d,"state":"received"}]}`, time.Now().UnixMilli(), time.Now().UnixMilli())},
			status: 202},
		{name: "a bad arrival report is refused", req: req{method: "POST", path: "/v1/forms/fair/arrivals", ctype: "application/json",
			body: fmt.Sprintf(`{"events":[{"key":"0b8f4f52-3f3e-4c1a-9d57-2a4e8f1f6c01","type":"answered","at":%d,"state":"delighted"}]}`, time.Now().UnixMilli())},
			status: 400, code: problem.CodeInvalidRequest},
		{name: "400 for the key .", req: jsonReq("strict", ".", `{"name":"dot"}`), status: 400, code: problem.CodeInvalidRequest},
		{name: "400 for the key ..", req: jsonReq("strict", "..", `{"name":"dots"}`), status: 400, code: problem.CodeInvalidRequest},
		{name: "422 for JSON text that is not UTF-8", req: jsonReq("strict", "k-utf8", "{\"name\":\"Li\xff\"}"), status: 422, code: problem.CodeValidationFailed,
			check: func(t *testing.T, _ *http.Response, body []byte) {
				if !bytes.Contains(body, []byte(`"field":"name"`)) || !bytes.Contains(body, []byte(`"invalid-value"`)) {
					t.Errorf("the error does not name the field: %s", body)
				}
			}},
		{name: "GET status of a stored key", req: req{method: "GET", path: "/v1/forms/fair/submissions/k-stored"}, status: 200, check: statusField("stored")},
		{name: "GET status of a processing key", req: req{method: "GET", path: "/v1/forms/slow/submissions/s1"}, status: 200, check: statusField("processing")},
		{name: "GET status of a duplicate key", req: req{method: "GET", path: "/v1/forms/fair/submissions/k-dup"}, status: 200, check: statusField("duplicate")},
		{name: "GET status never shows the data", req: req{method: "GET", path: "/v1/forms/fair/submissions/k-stored"}, status: 200, notInBody: []string{"Ann", "13800000001"}},
		{name: "404 submission-not-found", req: req{method: "GET", path: "/v1/forms/fair/submissions/never"}, status: 404, code: problem.CodeSubmissionNotFound},
		{name: "GET public definition", req: req{method: "GET", path: "/v1/forms/fair"}, status: 200, check: func(t *testing.T, _ *http.Response, body []byte) {
			var p struct {
				Open     bool
				Fields   []map[string]any
				Capacity struct {
					Limit, Left int
					Waitlist    bool
				}
			}
			if err := json.Unmarshal(body, &p); err != nil || !p.Open || len(p.Fields) != 3 || p.Capacity.Limit != 2 || !p.Capacity.Waitlist {
				t.Errorf("public form %s (%v)", body, err)
			}
		}},
		{name: "403 origin-not-allowed", req: withHeader(jsonReq("fair", "k-o", person("Gil", "13800000008")), "Origin", "https://evil.example"),
			status: 403, code: problem.CodeOriginNotAllowed},
		// The refusal is readable by the page that was refused (issue 34),
		// and only the refusal: no headers exposed, no data in the body.
		{name: "403 origin-not-allowed readable by the refused page", req: withHeader(jsonReq("fair", "k-o2", person("Gil", "13800000008")), "Origin", "https://evil.example"),
			status: 403, code: problem.CodeOriginNotAllowed, headers: map[string]string{"Access-Control-Allow-Origin": "https://evil.example", "Vary": "Origin"},
			absent: []string{"Access-Control-Expose-Headers", "Location"}},
		{name: "a refused page reads no status", req: req{method: "GET", path: "/v1/forms/fair/submissions/k-stored", headers: map[string]string{"Origin": "https://evil.example"}},
			status: 403, code: problem.CodeOriginNotAllowed, headers: map[string]string{"Access-Control-Allow-Origin": "https://evil.example"},
			notInBody: []string{"stored", "Ann", "sub_"}},
		{name: "a refused page reads no definition", req: req{method: "GET", path: "/v1/forms/fair", headers: map[string]string{"Origin": "https://evil.example"}},
			status: 403, code: problem.CodeOriginNotAllowed, notInBody: []string{"fields", "capacity"}},
		{name: "CORS preflight from an unlisted origin lets the refusal through", req: req{method: "OPTIONS", path: "/v1/forms/fair/submissions", headers: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}},
			status: 204, headers: map[string]string{"Access-Control-Allow-Origin": "https://evil.example", "Access-Control-Allow-Headers": "", "Access-Control-Allow-Methods": ""}},
		{name: "CORS preflight of an unknown form", req: req{method: "OPTIONS", path: "/v1/forms/nosuch/submissions", headers: map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}},
			status: 404, code: problem.CodeFormNotFound, absent: []string{"Access-Control-Allow-Origin"}},
		{name: "CORS headers for a listed origin", req: withHeader(jsonReq("fair", "k-cors", person("Hal", "13800000010")), "Origin", "https://fair.example.org"),
			status: 201, headers: map[string]string{"Access-Control-Allow-Origin": "https://fair.example.org", "Access-Control-Expose-Headers": ""}},
		{name: "CORS preflight", req: req{method: "OPTIONS", path: "/v1/forms/fair/submissions", headers: map[string]string{"Origin": "https://fair.example.org", "Access-Control-Request-Method": "POST"}},
			status: 204, headers: map[string]string{"Access-Control-Allow-Origin": "https://fair.example.org", "Access-Control-Allow-Headers": ""}},
		{name: "plain HTML post to a form without a limit", req: req{method: "POST", path: "/v1/forms/strict/submissions", ctype: "application/x-www-form-urlencoded",
			body: url.Values{"name": {"Html"}, "_key": {"html-2"}}.Encode(), headers: map[string]string{"Accept": "text/html,application/xhtml+xml"}},
			status: 303, headers: map[string]string{"Location": "/f/strict/done?key=html-2&manage=strict.*"}},
		{name: "plain HTML post with errors gets a page", req: req{method: "POST", path: "/v1/forms/strict/submissions", ctype: "application/x-www-form-urlencoded",
			body: url.Values{"name": {""}, "_key": {"html-3"}}.Encode(), headers: map[string]string{"Accept": "text/html"}},
			status: 422, headers: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "problem page for people", req: req{method: "GET", path: "/problems/duplicate-entry", headers: map[string]string{"Accept": "text/html"}}, status: 200,
			headers: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		{name: "problem doc for machines", req: req{method: "GET", path: "/problems/rate-limited"}, status: 200, headers: map[string]string{"Content-Type": "application/json"}},
		{name: "unknown problem code", req: req{method: "GET", path: "/problems/nope"}, status: 404, code: problem.CodeNotFound},
		{name: "unknown path", req: req{method: "GET", path: "/nothing/here"}, status: 404, code: problem.CodeNotFound},
	}
	client := servertest.Client()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var first []byte
			for _, s := range sc.setup {
				_, first = send(t, client, h.URL, s)
			}
			resp, body := send(t, client, h.URL, sc.req)
			if resp.StatusCode != sc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, sc.status, body)
			}
			if sc.code != "" {
				var p problem.Problem
				if err := json.Unmarshal(body, &p); err != nil || p.Code != sc.code || p.Type != "/problems/"+sc.code || p.Status != sc.status || p.Title == "" {
					t.Fatalf("problem %s, want code %s (%v)", body, sc.code, err)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
					t.Errorf("Content-Type %q, want application/problem+json", ct)
				}
			}
			for k, v := range sc.headers {
				got := resp.Header.Get(k)
				// A value ending in * is a prefix (a link token's mac varies).
				prefix, isPrefix := strings.CutSuffix(v, "*")
				if got == "" || (v != "" && got != v && !(isPrefix && strings.HasPrefix(got, prefix))) {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			for _, k := range sc.absent {
				if got := resp.Header.Get(k); got != "" {
					t.Errorf("header %s = %q, want none", k, got)
				}
			}
			if sc.sameAsFirst && !bytes.Equal(body, first) {
				t.Errorf("replay body differs from the first:\nfirst  %s\nreplay %s", first, body)
			}
			for _, s := range sc.notInBody {
				if bytes.Contains(body, []byte(s)) {
					t.Errorf("body echoes %q: %s", s, body)
				}
			}
			if sc.check != nil {
				sc.check(t, resp, body)
			}
		})
	}
}

// TestDerivedKey: without a key, the server derives one from the content,
// says so, and the same content again is the same submission.
func TestDerivedKey(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, apiForms, servertest.Options{})
	client := servertest.Client()
	r1, b1 := send(t, client, h.URL, jsonReq("fair", "", person("Ida", "13800000011")))
	r2, b2 := send(t, client, h.URL, jsonReq("fair", "", `{"name":"Ida ","phone":"+86 13800000011","tickets":1}`))
	if r1.StatusCode != 201 || r2.StatusCode != 200 || !bytes.Equal(b1, b2) {
		t.Fatalf("derived-key retry: %d %s / %d %s", r1.StatusCode, b1, r2.StatusCode, b2)
	}
	key := r1.Header.Get("Idempotency-Key")
	if !strings.HasPrefix(key, "fp-") || r1.Header.Get("Formd-Key-Derived") != "true" || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("headers %v / %v", r1.Header, r2.Header)
	}
}

// TestAsyncForm: an async form answers 202 before the journal fsyncs, and
// the entry still reaches its outcome.
func TestAsyncForm(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: telemetry\ndurability: async\nfields: [{name: event, type: text}]\n", servertest.Options{})
	client := servertest.Client()
	resp, body := send(t, client, h.URL, jsonReq("telemetry", "e1", `{"event":"click"}`))
	if resp.StatusCode != 202 || resp.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("async form: %d %s", resp.StatusCode, body)
	}
	// Answered 202, the key is known at once, even before the writer runs.
	if resp, body := send(t, client, h.URL, req{method: "GET", path: "/v1/forms/telemetry/submissions/e1"}); resp.StatusCode != 200 {
		t.Fatalf("status right after the 202: %d %s", resp.StatusCode, body)
	}
	// A retry is answered as the original, under its id, not as a new
	// submission.
	var first, again struct{ ID string }
	retry, retryBody := send(t, client, h.URL, jsonReq("telemetry", "e1", `{"event":"click"}`))
	if json.Unmarshal(body, &first) != nil || json.Unmarshal(retryBody, &again) != nil || first.ID == "" || again.ID != first.ID ||
		retry.Header.Get("Idempotent-Replayed") != "true" && retry.StatusCode != 202 {
		t.Fatalf("retry of an async key: %d %s, first %s", retry.StatusCode, retryBody, body)
	}
	poll.UntilNil(t, "the async entry stored", 10*time.Second, func() error {
		resp, body := send(t, client, h.URL, req{method: "GET", path: "/v1/forms/telemetry/submissions/e1"})
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"stored"`) {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})
}

func send(t *testing.T, c *http.Client, base string, r req) (*http.Response, []byte) {
	t.Helper()
	hr, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.ctype != "" {
		hr.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	c2 := *c
	c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c2.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}
