package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/formd/formd/internal/attempt"
)

// Defaults for Options.
const (
	DefaultTimeout             = 15 * time.Second
	DefaultUserAgent           = "formd-webhooks/1"
	DefaultMaxIdleConnsPerHost = 4
)

// Limits on what is read back from a receiver: the answer matters only
// for its status, and a receiver must not be able to make formd buffer an
// arbitrary body or fill the delivery log.
const (
	maxResponseRead = 4 << 10
	maxExcerpt      = 256
	maxRetryAfter   = 24 * time.Hour
	maxIDLength     = 255
)

// Options configure a Sender. Zero values take the defaults.
type Options struct {
	// Timeout bounds one attempt, from dialling to the end of reading
	// the answer: a delivery counts only when a 2xx status arrives within
	// it (an answer cut short after the status still counts). Default
	// 15s.
	Timeout time.Duration
	// Guard decides which addresses may be dialled. Default NewGuard(nil),
	// which refuses everything but the public internet.
	Guard *Guard
	// UserAgent is sent with every request. Default "formd-webhooks/1".
	UserAgent string
	// MaxIdleConnsPerHost bounds the kept-alive connections to one
	// receiver. Default 4.
	MaxIdleConnsPerHost int
	// Now is the clock, for timestamps, Retry-After dates and latency.
	// Default time.Now.
	Now func() time.Time

	// resolver and beforeConnect are for tests: a resolver that answers
	// names with the addresses under test, and a check that runs after
	// the guard's, so that a broken guard fails a test instead of
	// connecting anywhere.
	resolver      *net.Resolver
	beforeConnect func(netip.AddrPort) error
}

func (o *Options) setDefaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Guard == nil {
		o.Guard = NewGuard(nil)
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Request is one attempt to deliver one message.
type Request struct {
	// URL is the endpoint.
	URL string
	// Secrets sign the message, one signature each; during a rotation
	// both the old and the new secret are listed.
	Secrets []Secret
	// ID is the message's stable id (webhook-id): the same on every
	// attempt, so that receivers can drop a message they already have.
	ID string
	// Timestamp is the time of this attempt (webhook-timestamp), not of
	// the event: receivers refuse signatures more than a few minutes
	// old, so a retry must be signed afresh. Zero means Options.Now().
	Timestamp time.Time
	// Body is the JSON event.
	Body []byte
}

// Result is what happened to one attempt, for the caller's decision and
// the delivery log.
type Result struct {
	// Outcome is what the caller does next: attempt.Delivered on a 2xx,
	// attempt.Gone on a 410, attempt.Refused when retrying cannot help
	// (the URL, the id or the secrets are unusable, or the guard refused
	// the address), attempt.Retry for everything else (a timeout, a
	// connection error, any other status), no sooner than RetryAfter.
	Outcome attempt.Outcome
	// Status is the HTTP status the receiver answered, or 0 when there
	// was no answer.
	Status int
	// Latency is the time from the start of the attempt to the status
	// line (or to the failure).
	Latency time.Duration
	// Excerpt is the start of the receiver's answer (at most 256 bytes of
	// valid UTF-8, control characters replaced), or a note on a redirect
	// that was not followed; safe to show in the delivery log.
	Excerpt string
	// RetryAfter is the wait the receiver asked for with Retry-After on
	// a 429 or 503, at most 24h; zero when it asked for none.
	RetryAfter time.Duration
	// Err says why the attempt was not Delivered; nil when it was.
	Err error
	// Answer is the start of the receiver's answer as it came (at most
	// 4 KiB), for a caller that reads the platform's own result code;
	// not for the log (Excerpt is).
	Answer []byte
}

// Sender delivers webhooks over HTTP. It is safe for concurrent use and
// keeps connections alive between deliveries to the same receiver.
type Sender struct {
	opts   Options
	client *http.Client
}

// NewSender returns a sender. Its transport never uses a proxy from the
// environment (the proxy would dial for it, past the guard), never
// follows redirects, and checks every address it dials with the guard.
func NewSender(opts Options) *Sender {
	opts.setDefaults()
	guard, before := opts.Guard, opts.beforeConnect
	dialer := &net.Dialer{
		Resolver: opts.resolver,
		Control: func(network, address string, c syscall.RawConn) error {
			if err := guard.control(network, address, c); err != nil {
				return err
			}
			if before != nil {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return err
				}
				return before(ap)
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:               nil, // never from the environment: see above
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        100,
		MaxIdleConnsPerHost: opts.MaxIdleConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: opts.Timeout,
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Sender{opts: opts, client: client}
}

// Close drops the kept-alive connections. Deliveries in flight finish;
// the Sender stays usable and dials again when needed.
func (s *Sender) Close() {
	s.client.CloseIdleConnections()
}

// Send makes one attempt to deliver req and says what happened. It never
// retries by itself: the caller (the outbox dispatcher) owns the schedule,
// so that attempts survive a restart. Cancelling ctx ends the attempt as
// Retry.
func (s *Sender) Send(ctx context.Context, req Request) Result {
	start := s.opts.Now()
	refused := func(err error) Result {
		return Result{Outcome: attempt.Refused, Latency: s.opts.Now().Sub(start), Err: err}
	}
	if err := s.opts.Guard.CheckURL(req.URL); err != nil {
		return refused(err)
	}
	if err := checkID(req.ID); err != nil {
		return refused(err)
	}
	ts := req.Timestamp
	if ts.IsZero() {
		ts = start
	}
	sig := Sign(req.Secrets, req.ID, ts, req.Body)
	if sig == "" {
		return refused(fmt.Errorf("sign webhook: %w: give the endpoint a whsec_ secret", ErrNoSecret))
	}

	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return refused(fmt.Errorf("build webhook request: %w", ErrInvalidURL))
	}
	hreq.Header.Set(HeaderID, req.ID)
	hreq.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	hreq.Header.Set(HeaderSignature, sig)
	return s.do(ctx, hreq, start)
}

// Post makes one attempt to post a JSON body to url, unsigned, through
// the same guard, transport and limits as Send: for the chat platforms'
// robots, which carry their own token in the URL (and their signature,
// if any, in the URL or the body). Its Result carries the start of the
// answer in Answer, for the platform's own error code.
func (s *Sender) Post(ctx context.Context, url string, body []byte) Result {
	start := s.opts.Now()
	if err := s.opts.Guard.CheckURL(url); err != nil {
		return Result{Outcome: attempt.Refused, Latency: s.opts.Now().Sub(start), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: attempt.Refused, Latency: s.opts.Now().Sub(start), Err: fmt.Errorf("build request: %w", ErrInvalidURL)}
	}
	return s.do(ctx, hreq, start)
}

// do sends a built request and reads its answer into a Result.
func (s *Sender) do(ctx context.Context, hreq *http.Request, start time.Time) Result {
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", s.opts.UserAgent)
	resp, err := s.client.Do(hreq)
	latency := s.opts.Now().Sub(start)
	if err != nil {
		return s.failed(ctx, err, latency)
	}
	defer resp.Body.Close()
	// The status decides; the body is only for the log. A receiver that
	// sends its status and then stalls still counts as answered, so a
	// read error here changes nothing but the excerpt.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))

	r := Result{Status: resp.StatusCode, Latency: latency, Excerpt: Excerpt(head), Answer: head}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		r.Outcome = attempt.Delivered
	case code == http.StatusGone:
		r.Outcome = attempt.Gone
		r.Err = fmt.Errorf("post webhook: %w", ErrGone)
	case code >= 300 && code <= 399:
		r.Outcome = attempt.Retry
		r.Excerpt = redirectNote(resp)
		r.Err = fmt.Errorf("post webhook: %w: %s", ErrRedirect, resp.Status)
	default:
		r.Outcome = attempt.Retry
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			r.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), s.opts.Now())
		}
		r.Err = fmt.Errorf("post webhook: %w: %s", ErrStatus, resp.Status)
	}
	return r
}

// failed turns an error without an answer into a Result: refused when
// the guard refused every address, Retry for everything else.
func (s *Sender) failed(ctx context.Context, err error, latency time.Duration) Result {
	if refusal, ok := errors.AsType[*RefusedAddressError](err); ok {
		return Result{Outcome: attempt.Refused, Latency: latency, Err: fmt.Errorf("post webhook: %w", refusal)}
	}
	if errors.Is(err, ErrRefusedAddress) {
		return Result{Outcome: attempt.Refused, Latency: latency, Err: fmt.Errorf("post webhook: %w", ErrRefusedAddress)}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (%s)", ErrTimeout, s.opts.Timeout)
	} else if ue, ok := errors.AsType[*url.Error](err); ok {
		// url.Error repeats the URL, which may hold a token; the
		// delivery log already knows which endpoint this was.
		err = ue.Err
	}
	return Result{Outcome: attempt.Retry, Latency: latency, Err: fmt.Errorf("post webhook: %w", err)}
}

// checkID refuses ids that cannot travel in a header or that no receiver
// could store as a dedup key.
func checkID(id string) error {
	if id == "" || len(id) > maxIDLength {
		return fmt.Errorf("check webhook id: %w: want 1 to %d characters", ErrInvalidID, maxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return fmt.Errorf("check webhook id: %w: want visible ASCII characters only", ErrInvalidID)
		}
	}
	return nil
}

// redirectNote is the excerpt for a redirect: it says that it was not
// followed and where it pointed, so that the owner can fix the URL.
func redirectNote(resp *http.Response) string {
	note := resp.Status + ": redirect not followed"
	if loc := resp.Header.Get("Location"); loc != "" {
		note += "; Location: " + loc
	}
	return Excerpt([]byte(note))
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP
// date, as a wait from now. It returns zero for an absent, invalid or
// past value and caps the wait at 24h, so that one receiver cannot park
// a delivery indefinitely.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > uint64(maxRetryAfter/time.Second) {
			// Too large to parse is too large to wait.
			return maxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0
		}
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// Excerpt makes the start of a receiver's answer safe for the delivery
// log: valid UTF-8, line breaks and tabs turned into spaces, other
// control and format characters (such as bidi overrides) turned into
// U+FFFD, trimmed, at most 256 bytes, never cut inside a character.
func Excerpt(b []byte) string {
	b = bytes.TrimLeftFunc(b, unicode.IsSpace)
	var out strings.Builder
	for len(b) > 0 && out.Len() < maxExcerpt+utf8.UTFMax {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			r = utf8.RuneError
		}
		out.WriteRune(r)
	}
	s := out.String()
	for len(s) > maxExcerpt {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return strings.TrimRight(s, " ")
}
