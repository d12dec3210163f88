package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var testBody = []byte(`{"type":"submission.stored","timestamp":"2027-03-01T09:00:00Z","data":{"id":"s1","form":"spring-fair-2027"}}`)

func request(t *testing.T, url string) webhooks.Request {
	return webhooks.Request{
		URL:     url,
		Secrets: []webhooks.Secret{mustSecret(t, specSecret)},
		ID:      "evt_01J9Z3",
		Body:    testBody,
	}
}

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// A 2xx is a delivery, and what arrives is a Standard Webhooks request
// that the reference library verifies.
func TestSendDelivered(t *testing.T) {
	t.Parallel()
	for _, status := range []int{200, 201, 202, 204, 299} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, answer(status, `{"ok":true}`))
			s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly), Timeout: 5 * time.Second}, nil)
			ts := time.Now()
			req := request(t, rc.URL+"/hooks/formd")
			req.Timestamp = ts
			res := s.Send(context.Background(), req)
			if res.Outcome != attempt.Delivered || res.Status != status || res.Err != nil {
				t.Fatalf("Send = %+v, want Delivered %d", res, status)
			}
			if status != 204 && res.Excerpt != `{"ok":true}` {
				t.Errorf("Excerpt = %q", res.Excerpt)
			}
			got := rc.requests()
			if len(got) != 1 {
				t.Fatalf("receiver got %d requests", len(got))
			}
			r := got[0]
			for name, want := range map[string]string{
				"Content-Type":           "application/json",
				"User-Agent":             "formd-webhooks/1",
				webhooks.HeaderID:        "evt_01J9Z3",
				webhooks.HeaderTimestamp: strconv.FormatInt(ts.Unix(), 10),
				webhooks.HeaderSignature: webhooks.Sign(req.Secrets, req.ID, ts, testBody),
			} {
				if v := r.header.Get(name); v != want {
					t.Errorf("%s = %q, want %q", name, v, want)
				}
			}
			if r.method != http.MethodPost || string(r.body) != string(testBody) {
				t.Errorf("got %s %q", r.method, r.body)
			}
			wh, err := standardwebhooks.NewWebhook(specSecret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(r.body, r.header); err != nil {
				t.Errorf("reference library refused the delivery: %v", err)
			}
		})
	}
}

// A receiver that fails twice and then recovers: each attempt says Retry
// until the one that is Delivered, with the same webhook-id throughout,
// and each retry signed at its own time.
func TestSendFailsThenSucceeds(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n <= 2 {
			answer(http.StatusInternalServerError, "database is down\n")(w, nil)
			return
		}
		answer(http.StatusOK, "thanks")(w, nil)
	})
	now := time.Unix(1_800_000_000, 0)
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly), Now: func() time.Time { return now }}, nil)
	want := []struct {
		outcome attempt.Outcome
		status  int
		excerpt string
		err     error
	}{
		{attempt.Retry, 500, "database is down", webhooks.ErrStatus},
		{attempt.Retry, 500, "database is down", webhooks.ErrStatus},
		{attempt.Delivered, 200, "thanks", nil},
	}
	for i, w := range want {
		now = now.Add(time.Minute) // the caller's backoff
		res := s.Send(context.Background(), request(t, rc.URL))
		if res.Outcome != w.outcome || res.Status != w.status || res.Excerpt != w.excerpt || !errors.Is(res.Err, w.err) || (w.err == nil) != (res.Err == nil) {
			t.Errorf("attempt %d: %+v, want %+v", i+1, res, w)
		}
		if res.RetryAfter != 0 {
			t.Errorf("attempt %d: RetryAfter %s without a 429 or 503", i+1, res.RetryAfter)
		}
	}
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	for i, r := range got {
		if id := r.header.Get(webhooks.HeaderID); id != "evt_01J9Z3" {
			t.Errorf("attempt %d has webhook-id %q", i+1, id)
		}
		attemptTime := time.Unix(1_800_000_000, 0).Add(time.Duration(i+1) * time.Minute)
		if err := webhooks.Verify([]webhooks.Secret{mustSecret(t, specSecret)}, r.header, r.body, attemptTime, time.Second); err != nil {
			t.Errorf("attempt %d is not signed at its own time: %v", i+1, err)
		}
	}
}

// A receiver that never answers costs one timeout and a Retry.
func TestSendTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before rc.Close
	const timeout = 200 * time.Millisecond
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly), Timeout: timeout}, nil)
	start := time.Now()
	res := s.Send(context.Background(), request(t, rc.URL))
	elapsed := time.Since(start)
	if res.Outcome != attempt.Retry || res.Status != 0 || !errors.Is(res.Err, webhooks.ErrTimeout) {
		t.Fatalf("Send = %+v, want Retry with ErrTimeout", res)
	}
	// The receiver answers only when released, after the test: Send came
	// back, with ErrTimeout, because the timeout ended it, and not before.
	if elapsed < timeout {
		t.Errorf("Send took %s with a timeout of %s", elapsed, timeout)
	}
	if res.Latency < timeout {
		t.Errorf("Latency %s is shorter than the timeout", res.Latency)
	}
	select {
	case <-arrived:
	default:
		t.Error("the request never reached the receiver")
	}
}

// Cancelling the caller's context (shutdown) ends the attempt as Retry.
func TestSendCancelled(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(200, ""))
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := s.Send(ctx, request(t, rc.URL))
	if res.Outcome != attempt.Retry || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("Send = %+v, want Retry with context.Canceled", res)
	}
}

func TestSendGone(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(http.StatusGone, "this hook was deleted"))
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
	res := s.Send(context.Background(), request(t, rc.URL))
	if res.Outcome != attempt.Gone || res.Status != 410 || !errors.Is(res.Err, webhooks.ErrGone) || res.Excerpt != "this hook was deleted" {
		t.Fatalf("Send = %+v, want Gone", res)
	}
}

// Retry-After on 429 and 503 tells the caller how long to wait, in
// seconds or as an HTTP date, within bounds; other statuses' are ignored.
func TestSendRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{429, "7", 7 * time.Second},
		{503, "7", 7 * time.Second},
		{429, date(90 * time.Second), 90 * time.Second},
		{503, date(90 * time.Second), 90 * time.Second},
		{503, now.Add(2 * time.Minute).Format(time.RFC850), 2 * time.Minute},
		{429, "0", 0},
		{429, "", 0},
		{429, "soon", 0},
		{503, "-5", 0},
		{503, "1.5", 0},
		{429, date(-time.Hour), 0},
		{503, "86401", 24 * time.Hour},
		{503, "99999999999999999999999", 24 * time.Hour},
		{429, date(48 * time.Hour), 24 * time.Hour},
		{500, "7", 0},
		{502, "7", 0},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.retryAfter), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
			})
			s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly), Now: func() time.Time { return now }}, nil)
			res := s.Send(context.Background(), request(t, rc.URL))
			if res.Outcome != attempt.Retry || res.Status != tc.status || res.RetryAfter != tc.want || !errors.Is(res.Err, webhooks.ErrStatus) {
				t.Fatalf("Send = %+v, want Retry %d after %s", res, tc.status, tc.want)
			}
		})
	}
}

// A redirect is a failed attempt, never followed: not to another local
// server, and not to an address the guard refuses.
func TestSendRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	target := newReceiver(t, answer(200, "should not be reached"))
	for _, tc := range []struct {
		status   int
		location string
	}{
		{http.StatusFound, target.URL + "/elsewhere"},
		{http.StatusTemporaryRedirect, target.URL + "/elsewhere"},
		{http.StatusPermanentRedirect, "http://169.254.169.254/latest/meta-data/"},
		{http.StatusMovedPermanently, ""},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.WriteHeader(tc.status)
			})
			s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
			res := s.Send(context.Background(), request(t, rc.URL))
			if res.Outcome != attempt.Retry || res.Status != tc.status || !errors.Is(res.Err, webhooks.ErrRedirect) {
				t.Fatalf("Send = %+v, want a failed attempt", res)
			}
			if !strings.Contains(res.Excerpt, "redirect not followed") || !strings.Contains(res.Excerpt, tc.location) {
				t.Errorf("Excerpt = %q, want it to say the redirect to %q was not followed", res.Excerpt, tc.location)
			}
		})
	}
	t.Cleanup(func() {
		if n := target.count(); n != 0 {
			t.Errorf("the redirect target got %d requests", n)
		}
	})
}

// The answer is read no further than 4 KiB: a receiver that keeps
// talking after its status does not hold the attempt up, and what the
// log keeps is a short, clean excerpt.
func TestSendReadsLittleOfTheAnswer(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		chunk := "ok\x00\x1b[31m\u202eevil\xff\xfe\tline\r\n" + strings.Repeat("é", 2100)
		_, _ = w.Write([]byte(chunk[:4096]))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // and then never finishes
	})
	// The receiver never finishes its answer: only the timeout would end
	// a Send that read on past 4 KiB.
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly), Timeout: time.Hour}, nil)
	res := s.Send(context.Background(), request(t, rc.URL))
	if errors.Is(res.Err, webhooks.ErrTimeout) {
		t.Fatalf("Send = %+v: it waited for more than 4 KiB of the answer", res)
	}
	if res.Outcome != attempt.Retry || res.Status != 400 {
		t.Fatalf("Send = %+v", res)
	}
	checkExcerpt(t, res.Excerpt)
	if !strings.HasPrefix(res.Excerpt, "ok\uFFFD\uFFFD[31m\uFFFDevil\uFFFD\uFFFD line  é") {
		t.Errorf("Excerpt = %q", res.Excerpt)
	}
}

func checkExcerpt(t *testing.T, e string) {
	t.Helper()
	if len(e) > 256 || !utf8.ValidString(e) {
		t.Errorf("excerpt of %d bytes, valid UTF-8 %v: %q", len(e), utf8.ValidString(e), e)
	}
	for _, r := range e {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			t.Errorf("excerpt has control character %U: %q", r, e)
		}
	}
}

// The guard runs when the sender connects, on the address DNS gave: an
// innocent name that resolves to a refused address is refused before any
// packet leaves, whatever the URL text says. This is what defeats DNS
// rebinding, where a name resolves to a public address when the form is
// saved and to an internal one when the webhook is sent.
func TestSendRefusedAtConnectTime(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(200, "should not be reached"))
	names := map[string]netip.Addr{
		"loopback.formd.test": netip.MustParseAddr("127.0.0.1"),
		"ipv6.formd.test":     netip.MustParseAddr("::1"),
		"private.formd.test":  netip.MustParseAddr("10.1.2.3"),
		"metadata.formd.test": netip.MustParseAddr("169.254.169.254"),
		"mapped.formd.test":   netip.MustParseAddr("::ffff:127.0.0.1"),
		"ec2.formd.test":      netip.MustParseAddr("fd00:ec2::254"),
		"nat64.formd.test":    netip.MustParseAddr("64:ff9b::a9fe:a9fe"),
	}
	resolver := startDNS(t, names)
	s := newSender(t, webhooks.Options{Timeout: 5 * time.Second}, resolver) // the default guard
	for name, ip := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := "http://" + name + ":" + rc.port() + "/hooks"
			if err := webhooks.ValidateURL(url); err != nil {
				t.Fatalf("the URL text alone is refused (%v); the test would not show a connect-time check", err)
			}
			res := s.Send(context.Background(), request(t, url))
			refusal, ok := errors.AsType[*webhooks.RefusedAddressError](res.Err)
			if res.Outcome != attempt.Refused || !ok {
				t.Fatalf("Send = %+v, want Refused with a *RefusedAddressError", res)
			}
			if refusal.IP.Unmap() != ip.Unmap() {
				t.Errorf("refused %s, want %s", refusal.IP, ip)
			}
		})
	}
	t.Cleanup(func() {
		if n := rc.count(); n != 0 {
			t.Errorf("the receiver behind the refused names got %d requests", n)
		}
	})
}

// URLs that name a refused address outright are refused before dialling.
func TestSendRefusedLiterals(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(200, "should not be reached"))
	port := rc.port()
	s := newSender(t, webhooks.Options{}, nil) // the default guard
	for _, url := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://localhost:" + port + "/",
		"http://[::1]:" + port + "/",
		"http://10.1.2.3/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://[fd00:ec2::254]/",
	} {
		res := s.Send(context.Background(), request(t, url))
		if res.Outcome != attempt.Refused || !errors.Is(res.Err, webhooks.ErrRefusedAddress) {
			t.Errorf("Send(%s) = %+v, want Refused", url, res)
		}
	}
	if n := rc.count(); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// What retrying cannot fix is refused without a request.
func TestSendRefusedRequests(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(200, ""))
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
	for _, tc := range []struct {
		name string
		edit func(*webhooks.Request)
		want error
	}{
		{"invalid URL", func(r *webhooks.Request) { r.URL = "ftp://example.org/" }, webhooks.ErrInvalidURL},
		{"URL with a password", func(r *webhooks.Request) { r.URL = strings.Replace(r.URL, "://", "://u:p@", 1) }, webhooks.ErrInvalidURL},
		{"no secrets", func(r *webhooks.Request) { r.Secrets = nil }, webhooks.ErrNoSecret},
		{"only a zero secret", func(r *webhooks.Request) { r.Secrets = []webhooks.Secret{{}} }, webhooks.ErrNoSecret},
		{"no id", func(r *webhooks.Request) { r.ID = "" }, webhooks.ErrInvalidID},
		{"id with a line break", func(r *webhooks.Request) { r.ID = "evt\r\nX-Injected: 1" }, webhooks.ErrInvalidID},
		{"id too long", func(r *webhooks.Request) { r.ID = strings.Repeat("e", 256) }, webhooks.ErrInvalidID},
	} {
		req := request(t, rc.URL)
		tc.edit(&req)
		res := s.Send(context.Background(), req)
		if res.Outcome != attempt.Refused || !errors.Is(res.Err, tc.want) {
			t.Errorf("%s: Send = %+v, want Refused with %v", tc.name, res, tc.want)
		}
	}
	if n := rc.count(); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}
}

// A connection refused by the receiver's host is worth retrying.
func TestSendConnectionError(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(200, ""))
	url := rc.URL
	rc.Close() // nothing listens there any more
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
	res := s.Send(context.Background(), request(t, url+"/hooks?token=s3cr3t"))
	if res.Outcome != attempt.Retry || res.Status != 0 || res.Err == nil {
		t.Fatalf("Send = %+v, want Retry", res)
	}
	if strings.Contains(res.Err.Error(), "s3cr3t") {
		t.Errorf("Err repeats the URL's token: %v", res.Err)
	}
}

// A proxy named in the environment is never used: it would connect on
// the sender's behalf, past the guard.
func TestSendIgnoresProxyEnvironment(t *testing.T) {
	proxy := newReceiver(t, answer(200, "proxied"))
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	rc := newReceiver(t, answer(200, "direct"))
	// A name, because Go never proxies requests to loopback addresses
	// written as such.
	resolver := startDNS(t, map[string]netip.Addr{"receiver.formd.test": netip.MustParseAddr("127.0.0.1")})
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, resolver)
	res := s.Send(context.Background(), request(t, "http://receiver.formd.test:"+rc.port()+"/"))
	if res.Outcome != attempt.Delivered || res.Excerpt != "direct" {
		t.Fatalf("Send = %+v, want delivered directly", res)
	}
	if n := proxy.count(); n != 0 {
		t.Errorf("the proxy got %d requests", n)
	}
}

// One Sender serves many deliveries at once (run with -race).
func TestSendConcurrent(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, answer(204, ""))
	s := newSender(t, webhooks.Options{Guard: webhooks.NewGuard(loopbackOnly)}, nil)
	var wg sync.WaitGroup
	results := make(chan webhooks.Result, 40)
	for i := range 40 {
		wg.Go(func() {
			req := request(t, rc.URL)
			req.ID = fmt.Sprintf("evt_%d", i)
			results <- s.Send(context.Background(), req)
		})
	}
	wg.Wait()
	close(results)
	for res := range results {
		if res.Outcome != attempt.Delivered {
			t.Errorf("Send = %+v", res)
		}
	}
	if n := rc.count(); n != 40 {
		t.Errorf("receiver got %d requests, want 40", n)
	}
}
