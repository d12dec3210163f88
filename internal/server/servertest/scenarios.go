package servertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/problem"
)

// Scenario is one request to a running instance and what its answer must
// be, in the shape of PocketBase's API scenarios (intake's API tests use
// the same): name, method, URL, body, then the status, the problem code
// and the content expected. Rows run in order, so a later row may use
// what an earlier one made (URLOf, reading what Check kept).
type Scenario struct {
	Name   string
	Method string
	// URL is the request's path on the instance; URLOf, when set, gives
	// it at the row's turn instead (an id an earlier row made).
	URL   string
	URLOf func() string
	// Body is the request's body; BodyOf, when set, gives it at the
	// row's turn instead.
	Body   []byte
	BodyOf func() []byte
	// Headers are sent with the request; Token sends the harness's
	// admin token as its bearer, AsToken another token.
	Headers map[string]string
	Token   bool
	AsToken func() string

	ExpectedStatus int
	// ExpectedCode is the problem code of an error answer, which is then
	// application/problem+json with type /problems/<code> and the
	// status.
	ExpectedCode string
	// ExpectedHeaders must be in the answer ("" for any value).
	ExpectedHeaders map[string]string
	// AbsentHeaders must not be.
	AbsentHeaders []string
	// ExpectedContent must be in the body; NotExpectedContent must not.
	ExpectedContent    []string
	NotExpectedContent []string
	// Check checks more, and may keep what later rows need.
	Check func(t *testing.T, resp *http.Response, body []byte)
}

// RunScenarios sends each scenario to h in order, each as a subtest; a row
// that fails stops the rows after it, which may depend on it.
func (h *Harness) RunScenarios(t *testing.T, scenarios []Scenario) {
	t.Helper()
	c := Client()
	for _, sc := range scenarios {
		if !t.Run(sc.Name, func(t *testing.T) { h.runScenario(t, c, sc) }) {
			t.FailNow()
		}
	}
}

func (h *Harness) runScenario(t *testing.T, c *http.Client, sc Scenario) {
	path := sc.URL
	if sc.URLOf != nil {
		path = sc.URLOf()
	}
	body := sc.Body
	if sc.BodyOf != nil {
		body = sc.BodyOf()
	}
	req, err := http.NewRequest(sc.Method, h.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sc.Headers {
		req.Header.Set(k, v)
	}
	switch {
	case sc.AsToken != nil:
		req.Header.Set("Authorization", "Bearer "+sc.AsToken())
	case sc.Token:
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != sc.ExpectedStatus {
		t.Fatalf("%s %s: %d, want %d: %s", sc.Method, path, resp.StatusCode, sc.ExpectedStatus, body)
	}
	if sc.ExpectedCode != "" {
		var p problem.Problem
		if err := json.Unmarshal(body, &p); err != nil || p.Code != sc.ExpectedCode || p.Type != "/problems/"+sc.ExpectedCode || (p.Status != 0 && p.Status != sc.ExpectedStatus) {
			t.Fatalf("problem %s, want code %s (%v)", body, sc.ExpectedCode, err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("Content-Type %q, want application/problem+json", ct)
		}
	}
	for k, v := range sc.ExpectedHeaders {
		if got := resp.Header.Get(k); got == "" || (v != "" && got != v) {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	for _, k := range sc.AbsentHeaders {
		if got := resp.Header.Get(k); got != "" {
			t.Errorf("header %s = %q, want none", k, got)
		}
	}
	for _, s := range sc.ExpectedContent {
		if !bytes.Contains(body, []byte(s)) {
			t.Errorf("body lacks %q: %s", s, body)
		}
	}
	for _, s := range sc.NotExpectedContent {
		if bytes.Contains(body, []byte(s)) {
			t.Errorf("body has %q: %s", s, body)
		}
	}
	if sc.Check != nil {
		sc.Check(t, resp, body)
	}
}
