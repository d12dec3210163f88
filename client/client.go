// Package client submits to a formd server with formd's client protocol,
// the one its JavaScript SDK follows too: a submission keeps one
// idempotency key until the server gives a definitive answer; network
// errors, timeouts, 429, 503 and other 5xx answers are retried with that
// same key, with exponential backoff, full jitter and the server's
// Retry-After; after a timeout or a broken connection the client first
// asks for the status of its key, and only sends the submission again
// when the server does not know it; and an optional on-disk Outbox keeps
// the submission until that answer, so a process that dies can resume.
//
// A definitive answer is one that sending again cannot change: stored or
// waitlisted (201, or 200 for a retry), already registered or full (409),
// closed (410), invalid or key reused (422), form not found (404), and the
// other refusals (400, 403, 413, 415). Submit returns it as an Outcome.
//
// The package depends only on the standard library and formd's atomicfile,
// so a Go program that feeds a formd server (an importer, a kiosk, a bot)
// can vendor it freely.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Default protocol settings; Options documents each.
const (
	DefaultAttemptTimeout = 15 * time.Second
	DefaultWait           = 5 * time.Second
	DefaultMinBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	// MaxRetryAfter caps how long a Retry-After header can make the
	// client wait, so that a bad header cannot park a submission for a
	// day; the context still bounds the whole submission.
	MaxRetryAfter = 5 * time.Minute
	// maxAnswer bounds how much of an answer is read: formd's answers are
	// a few hundred bytes.
	maxAnswer = 1 << 20
)

// Clock is the time source: tests replace it to observe the backoff
// without waiting for it.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever comes first, and
	// returns ctx's error in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real time.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Options tune a Client. The zero value is valid: every field has a
// default.
type Options struct {
	// HTTPClient sends the requests. Its Timeout should be zero or longer
	// than AttemptTimeout; the default client keeps up to 64 idle
	// connections to the server.
	HTTPClient *http.Client
	// AttemptTimeout bounds one request. When it passes the client does
	// not know whether the server got the submission, so it asks for the
	// status of the key before sending again. Default 15s; it should be
	// longer than Wait.
	AttemptTimeout time.Duration
	// Wait is how long the server may hold a POST for the outcome before
	// answering 202 (Prefer: wait=N, in whole seconds). A 202 is followed
	// by status queries until the outcome is known. Default 5s; a
	// negative Wait sends no Prefer header (the server's default applies).
	Wait time.Duration
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// tries: the n-th consecutive failure waits a random time in
	// [0, min(MaxBackoff, MinBackoff·2^(n-1))] ("full jitter"), and never
	// less than the server's Retry-After. Defaults 250ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Outbox, when set, keeps each submission on disk from before its
	// first attempt until its definitive answer; Resume sends what a
	// previous process left there.
	Outbox *Outbox
	// Clock is the time source. Default SystemClock.
	Clock Clock
	// Jitter returns a uniformly random duration in [0, n]. Default
	// math/rand/v2; tests replace it to make the backoff predictable.
	Jitter func(n time.Duration) time.Duration
	// OnEvent, when set, is called for every step of the protocol (from
	// the goroutine that calls Submit), for metrics and logs. It must be
	// quick and must not block.
	OnEvent func(Event)
	// UserAgent is sent with every request. Default "formd-go-client".
	UserAgent string
}

// EventType says what an Event reports.
type EventType int

// The protocol steps that OnEvent sees.
const (
	// EventSend: a POST of the submission is about to be sent; Attempt
	// counts them (1 for the first).
	EventSend EventType = iota + 1
	// EventStatusQuery: a status query for the key is about to be sent.
	EventStatusQuery
	// EventAnswer: the server answered (HTTPStatus, and Code for a
	// problem document).
	EventAnswer
	// EventNetworkError: a request failed without an answer (Err);
	// Timeout says whether the attempt timed out.
	EventNetworkError
	// EventBackoff: the client waits Delay before it tries again.
	EventBackoff
)

// Event is one step of the protocol.
type Event struct {
	Type       EventType
	Form, Key  string
	HTTPStatus int
	Code       string
	Err        error
	Timeout    bool
	Delay      time.Duration
	Attempt    int
}

// Client submits to one formd server. It is safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
	opts Options
}

// New makes a client for the server at baseURL (scheme, host and
// optional path prefix, such as "https://forms.example.org").
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("parse server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http:// or https:// and a host", baseURL)
	}
	if opts.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		opts.HTTPClient = &http.Client{Transport: t}
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
	}
	if opts.Wait == 0 {
		opts.Wait = DefaultWait
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		return nil, fmt.Errorf("MaxBackoff %s is below MinBackoff %s", opts.MaxBackoff, opts.MinBackoff)
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = func(n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			return rand.N(n + 1)
		}
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "formd-go-client"
	}
	return &Client{base: strings.TrimRight(u.String(), "/"), hc: opts.HTTPClient, opts: opts}, nil
}

// Submission is one thing a person submits to one form.
type Submission struct {
	// Form is the form id.
	Form string
	// Key is the idempotency key: 1 to 255 visible ASCII characters,
	// unique per submission and reused for every retry of it. Submit
	// makes one (NewKey) when it is empty; keep the key that Result
	// reports if you store the submission elsewhere.
	Key string
	// Body is the submission as a JSON object of field → value. It is
	// sent byte-for-byte on every try, so the server's fingerprint of it
	// never changes.
	Body json.RawMessage
}

// NewSubmission encodes fields (a map or a struct) as the body of a
// submission to form, with a new key.
func NewSubmission(form string, fields any) (Submission, error) {
	b, err := json.Marshal(fields)
	if err != nil {
		return Submission{}, fmt.Errorf("encode submission: %w", err)
	}
	return Submission{Form: form, Key: NewKey(), Body: b}, nil
}

func (s *Submission) check() error {
	if s.Form == "" {
		return errors.New("submission has no form id")
	}
	if s.Key == "" {
		s.Key = NewKey()
	}
	if !ValidKey(s.Key) {
		return fmt.Errorf("idempotency key %q: want 1 to 255 visible ASCII characters", s.Key)
	}
	trimmed := bytes.TrimSpace(s.Body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return errors.New("submission body is not a JSON object")
	}
	return nil
}

// Submit delivers s and returns its definitive outcome. It retries, with
// the same key, until the server answers definitively or ctx ends; in the
// second case the error is a *NotDecidedError (errors.Is ErrNotDecided)
// that says whether the server acknowledged the submission. Other errors
// mean the submission was not attempted (an invalid submission, or an
// Outbox that cannot be written).
func (c *Client) Submit(ctx context.Context, s Submission) (Result, error) {
	if err := s.check(); err != nil {
		return Result{}, err
	}
	if c.opts.Outbox != nil {
		if err := c.opts.Outbox.Put(s); err != nil {
			return Result{Form: s.Form, Key: s.Key}, err
		}
	}
	return c.finish(c.deliver(ctx, s, false))
}

// Resume sends every submission that the Outbox still holds (left by a
// process that stopped before their answers), asking the server for each
// key's status first. It returns the outcomes it got; when ctx ends
// first, the error lists the submissions still pending, which stay in the
// Outbox.
func (c *Client) Resume(ctx context.Context) ([]Result, error) {
	if c.opts.Outbox == nil {
		return nil, errors.New("resume: the client has no outbox")
	}
	pending, err := c.opts.Outbox.Pending()
	if err != nil {
		return nil, err
	}
	var results []Result
	var errs []error
	for _, s := range pending {
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("outbox entry %s/%s: %w", s.Form, s.Key, err))
			continue
		}
		r, err := c.finish(c.deliver(ctx, s, true))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		results = append(results, r)
	}
	return results, errors.Join(errs...)
}

// finish drops a decided submission from the outbox.
func (c *Client) finish(r Result, err error) (Result, error) {
	if err == nil && c.opts.Outbox != nil {
		if rerr := c.opts.Outbox.Remove(r.Form, r.Key); rerr != nil {
			// The outcome stands; a leftover file only makes Resume ask
			// for this key's status again.
			return r, fmt.Errorf("submission decided (%s) but not removed from the outbox: %w", r.Outcome, rerr)
		}
	}
	return r, err
}

// step is what one request taught the protocol loop.
type step int

const (
	stepDecided    step = iota + 1 // definitive: return
	stepPending                    // journaled, not decided: poll the status
	stepResend                     // not journaled (429, 503): send again after a backoff
	stepAmbiguous                  // may or may not have arrived: ask for the status, then maybe send again
	stepUnknownKey                 // the status query found no such key: send now
)

// deliver runs the protocol for one submission until a definitive answer
// or the end of ctx. query starts with a status query (a resumed
// submission may already have arrived).
func (c *Client) deliver(ctx context.Context, s Submission, query bool) (Result, error) {
	res := Result{Form: s.Form, Key: s.Key, Started: c.opts.Clock.Now()}
	failures, polls := 0, 0
	for {
		var st step
		var retryAfter time.Duration
		if query {
			st, retryAfter = c.queryStatus(ctx, s, &res)
		} else {
			st, retryAfter = c.post(ctx, s, &res)
		}
		if st == stepDecided {
			res.DecidedAt = c.opts.Clock.Now()
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return res, &NotDecidedError{Result: res, Err: err}
		}
		var delay time.Duration
		switch st {
		case stepUnknownKey:
			query = false
			continue
		case stepPending:
			// The server holds it: poll, starting at its Retry-After and
			// slowing down while it stays undecided.
			query = true
			failures = 0
			polls++
			delay = c.backoff(polls, max(retryAfter, time.Second))
		case stepResend:
			query = false
			failures++
			delay = c.backoff(failures, retryAfter)
		case stepAmbiguous:
			query = true
			failures++
			delay = c.backoff(failures, retryAfter)
		}
		c.emit(Event{Type: EventBackoff, Form: s.Form, Key: s.Key, Delay: delay})
		if err := c.opts.Clock.Sleep(ctx, delay); err != nil {
			return res, &NotDecidedError{Result: res, Err: err}
		}
	}
}

// backoff is the wait before the next try after n consecutive failures:
// full jitter under an exponential ceiling, and never less than the
// server's Retry-After. Clients that the server answered at the same
// moment with the same Retry-After are spread over half of it again, so
// that they do not all come back together.
func (c *Client) backoff(n int, retryAfter time.Duration) time.Duration {
	ceil := c.opts.MaxBackoff
	if n <= 30 {
		ceil = min(c.opts.MaxBackoff, c.opts.MinBackoff<<(max(n, 1)-1))
	}
	d := c.opts.Jitter(ceil)
	if retryAfter > 0 && d < retryAfter {
		d = retryAfter + c.opts.Jitter(retryAfter/2)
	}
	return d
}

func (c *Client) emit(e Event) {
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(e)
	}
}

func (c *Client) submissionsURL(form string) string {
	return c.base + "/v1/forms/" + url.PathEscape(form) + "/submissions"
}

// post sends the submission once and classifies the answer.
func (c *Client) post(ctx context.Context, s Submission, res *Result) (step, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.submissionsURL(s.Form), bytes.NewReader(s.Body))
	if err != nil {
		// Form ids and keys are escaped; this is a bug, not a condition.
		panic(fmt.Sprintf("build request: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", s.Key)
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if c.opts.Wait > 0 {
		secs := int((c.opts.Wait + time.Second - 1) / time.Second)
		req.Header.Set("Prefer", "wait="+strconv.Itoa(secs))
	}
	res.Attempts++
	c.emit(Event{Type: EventSend, Form: s.Form, Key: s.Key, Attempt: res.Attempts})
	a, err := c.do(req)
	if err != nil {
		c.emit(Event{Type: EventNetworkError, Form: s.Form, Key: s.Key, Err: err, Timeout: actx.Err() != nil})
		if mayHaveArrived(err) {
			return stepAmbiguous, 0
		}
		return stepResend, 0
	}
	c.emit(Event{Type: EventAnswer, Form: s.Form, Key: s.Key, HTTPStatus: a.status, Code: a.code()})
	replayed := a.header.Get("Idempotent-Replayed") == "true"
	switch {
	case a.status == http.StatusCreated || a.status == http.StatusOK:
		c.acknowledge(res)
		doc, ok := a.doc()
		if !ok {
			// Acknowledged, but the answer is unreadable: the status
			// query will tell what it was.
			return stepPending, 0
		}
		res.Doc = doc
		if o, decided := docOutcome(doc.Status); decided {
			res.Outcome, res.HTTPStatus, res.Replayed = o, a.status, replayed
			return stepDecided, 0
		}
		return stepPending, c.retryAfter(a)
	case a.status == http.StatusAccepted:
		c.acknowledge(res)
		if strings.Contains(a.header.Get("Preference-Applied"), "respond-async") {
			// This client never asks for respond-async: the form is an
			// async one, whose 202 comes before the journal write and
			// does not promise that the entry survives a crash.
			res.durable = false
		}
		if doc, ok := a.doc(); ok {
			res.Doc = doc
		}
		return stepPending, c.retryAfter(a)
	case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
		// formd refuses these before it journals anything.
		return stepResend, c.retryAfter(a)
	case a.status == http.StatusRequestTimeout || a.status >= 500:
		// An internal error or a proxy's timeout may come after the
		// journal write: ask before sending again.
		return stepAmbiguous, c.retryAfter(a)
	case a.status >= 400:
		p := a.problem()
		res.Problem, res.HTTPStatus, res.Replayed = p, a.status, replayed
		res.Outcome = problemOutcome(a.status, p.Code)
		if res.Outcome == AlreadyRegistered || res.Outcome == Full {
			// The processor decided it, so it was journaled.
			c.acknowledge(res)
		}
		return stepDecided, 0
	default:
		// 1xx/3xx: not formd's protocol; treat it as a broken answer.
		return stepAmbiguous, 0
	}
}

// queryStatus asks for the status of the key once.
func (c *Client) queryStatus(ctx context.Context, s Submission, res *Result) (step, time.Duration) {
	actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
	defer cancel()
	res.StatusQueries++
	c.emit(Event{Type: EventStatusQuery, Form: s.Form, Key: s.Key})
	a, err := c.status(actx, s.Form, s.Key)
	if err != nil {
		c.emit(Event{Type: EventNetworkError, Form: s.Form, Key: s.Key, Err: err, Timeout: actx.Err() != nil})
		// Asking again is harmless; the status decides what comes next.
		return stepAmbiguous, 0
	}
	c.emit(Event{Type: EventAnswer, Form: s.Form, Key: s.Key, HTTPStatus: a.status, Code: a.code()})
	switch {
	case a.status == http.StatusOK:
		doc, ok := a.doc()
		if !ok {
			return stepAmbiguous, 0
		}
		c.acknowledge(res)
		res.Doc = doc
		if o, decided := docOutcome(doc.Status); decided {
			res.Outcome, res.HTTPStatus = o, a.status
			return stepDecided, 0
		}
		return stepPending, c.retryAfter(a)
	case a.status == http.StatusNotFound:
		p := a.problem()
		if p.Code == CodeFormNotFound {
			res.Problem, res.HTTPStatus, res.Outcome = p, a.status, FormNotFound
			return stepDecided, 0
		}
		if res.Acknowledged && res.durable {
			// The server said it held this submission durably and now
			// does not know it. Send it again (the client still has it), but keep
			// the evidence.
			res.Forgotten = true
		}
		return stepUnknownKey, 0
	case a.status == http.StatusTooManyRequests || a.status == http.StatusRequestTimeout || a.status >= 500:
		return stepAmbiguous, c.retryAfter(a)
	default:
		// A status query the server will not answer (a proxy that blocks
		// GET, say): the POST itself is safe to repeat.
		return stepUnknownKey, 0
	}
}

func (c *Client) acknowledge(res *Result) {
	if !res.Acknowledged {
		res.Acknowledged = true
		res.durable = true
		res.AcknowledgedAt = c.opts.Clock.Now()
	}
}

// Status asks the server for the status document of a key: 200 with the
// document, or an error (wrapping a *Problem answer as *StatusError).
func (c *Client) Status(ctx context.Context, form, key string) (*StatusDoc, error) {
	a, err := c.status(ctx, form, key)
	if err != nil {
		return nil, err
	}
	if a.status == http.StatusOK {
		if doc, ok := a.doc(); ok {
			return doc, nil
		}
		return nil, fmt.Errorf("status of %s/%s: unreadable status document", form, key)
	}
	return nil, &StatusError{HTTPStatus: a.status, Problem: a.problem()}
}

// StatusError is a status query that the server answered with an error,
// such as 404 submission-not-found.
type StatusError struct {
	HTTPStatus int
	Problem    *Problem
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("status query: %d %s", e.HTTPStatus, e.Problem.Code)
}

func (c *Client) status(ctx context.Context, form, key string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.submissionsURL(form)+"/"+url.PathEscape(key), nil)
	if err != nil {
		panic(fmt.Sprintf("build request: %v", err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	return c.do(req)
}

// answer is a whole HTTP answer, read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) do(req *http.Request) (answer, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		// A cut answer is no answer: the connection broke mid-way.
		return answer{}, fmt.Errorf("read answer %d: %w", resp.StatusCode, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func (a answer) doc() (*StatusDoc, bool) {
	var d StatusDoc
	if err := json.Unmarshal(a.body, &d); err != nil || d.Status == "" {
		return nil, false
	}
	return &d, true
}

func (a answer) problem() *Problem {
	p := &Problem{Status: a.status}
	mt, _, _ := mime.ParseMediaType(a.header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		_ = json.Unmarshal(a.body, p) // a body that is not a problem leaves the code empty
	}
	return p
}

func (a answer) code() string {
	if a.status < 400 {
		return ""
	}
	return a.problem().Code
}

// retryAfter reads Retry-After: delay-seconds or an HTTP date.
func (c *Client) retryAfter(a answer) time.Duration {
	return parseRetryAfter(a.header.Get("Retry-After"), c.opts.Clock.Now())
}

func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.Atoi(v); err == nil {
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// docOutcome maps a status document's status to an outcome; decided is
// false for processing.
func docOutcome(status string) (Outcome, bool) {
	switch status {
	case "stored":
		return Stored, true
	case "waitlisted":
		return Waitlisted, true
	case "cancelled":
		return Cancelled, true
	case "duplicate":
		return AlreadyRegistered, true
	case "rejected":
		return Full, true
	}
	return "", false
}

func problemOutcome(status int, code string) Outcome {
	switch code {
	case CodeDuplicateEntry:
		return AlreadyRegistered
	case CodeCapacityReached:
		return Full
	case CodeFormClosed:
		return Closed
	case CodeValidationFailed:
		return Invalid
	case CodeKeyReused:
		return KeyReused
	case CodeFormNotFound:
		return FormNotFound
	}
	switch status {
	case http.StatusGone:
		return Closed
	case http.StatusUnprocessableEntity:
		return Invalid
	}
	return Refused
}

// mayHaveArrived tells a failure that may have reached the server (a
// timeout, a connection cut after the request was written) from one that
// cannot have (the connection was never made).
func mayHaveArrived(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return true
}
