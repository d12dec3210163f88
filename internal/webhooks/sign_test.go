package webhooks_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The test vector published with the Standard Webhooks specification
// (and used by its reference libraries' tests).
const (
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignSpecVector(t *testing.T) {
	t.Parallel()
	ts := time.Unix(specTimestamp, 0)
	got := webhooks.Sign([]webhooks.Secret{mustSecret(t, specSecret)}, specID, ts, []byte(specBody))
	if got != specSignature {
		t.Fatalf("Sign = %q, want the specification's %q", got, specSignature)
	}
	h := headers(specID, ts, specSignature)
	if err := webhooks.Verify([]webhooks.Secret{mustSecret(t, specSecret)}, h, []byte(specBody), ts, 0); err != nil {
		t.Fatalf("Verify of the specification's vector: %v", err)
	}
}

func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhooks.HeaderSignature, sig)
	return h
}

// Signatures are checked by the Standard Webhooks reference library for
// Go, an implementation that is not ours, including during a rotation:
// while the endpoint has two secrets, a receiver that knows either one
// verifies, and one that knows neither does not.
func TestReferenceLibraryVerifiesSign(t *testing.T) {
	t.Parallel()
	oldS, newS, otherS := specSecret, secretOf(32), webhooks.NewSecret()
	body := []byte(`{"type":"submission.stored","timestamp":"2027-03-01T09:00:00Z","data":{"id":"s1"}}`)
	for _, tc := range []struct {
		name     string
		signWith []string
		receiver string
		ok       bool
	}{
		{"one secret", []string{oldS}, oldS, true},
		{"rotation, receiver knows only the old secret", []string{oldS, newS}, oldS, true},
		{"rotation, receiver already has the new secret", []string{oldS, newS}, newS, true},
		{"after rotation, receiver still on the old secret", []string{newS}, oldS, false},
		{"receiver knows neither", []string{oldS, newS}, otherS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var secrets []webhooks.Secret
			for _, s := range tc.signWith {
				secrets = append(secrets, mustSecret(t, s))
			}
			// The reference library reads the wall clock, so the
			// message is signed now.
			ts := time.Now()
			sig := webhooks.Sign(secrets, "evt_1", ts, body)
			if n := strings.Count(sig, "v1,"); n != len(secrets) {
				t.Errorf("%d signatures for %d secrets: %q", n, len(secrets), sig)
			}
			wh, err := standardwebhooks.NewWebhook(tc.receiver)
			if err != nil {
				t.Fatal(err)
			}
			err = wh.Verify(body, headers("evt_1", ts, sig))
			if tc.ok && err != nil {
				t.Errorf("reference library refused: %v", err)
			}
			if !tc.ok && !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Errorf("reference library: err = %v, want no matching signature", err)
			}
			if err := wh.Verify([]byte(`{"tampered":true}`), headers("evt_1", ts, sig)); err == nil {
				t.Error("reference library accepted a tampered body")
			}
		})
	}
}

// Verify accepts what the reference library signs, so the example
// receiver and the tests check signatures the way other receivers do.
func TestVerifyAcceptsReferenceLibrary(t *testing.T) {
	t.Parallel()
	wh, err := standardwebhooks.NewWebhook(specSecret)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1_800_000_000, 0)
	sig, err := wh.Sign("evt_2", ts, []byte(specBody))
	if err != nil {
		t.Fatal(err)
	}
	secrets := []webhooks.Secret{mustSecret(t, secretOf(40)), mustSecret(t, specSecret)}
	if err := webhooks.Verify(secrets, headers("evt_2", ts, sig), []byte(specBody), ts.Add(time.Minute), 0); err != nil {
		t.Fatalf("Verify refused the reference library's signature: %v", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret := mustSecret(t, specSecret)
	ts := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	good := webhooks.Sign([]webhooks.Secret{secret}, "evt_3", ts, body)
	for _, tc := range []struct {
		name      string
		edit      func(h http.Header) []byte // returns the body to verify
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{name: "valid", now: ts},
		{name: "five minutes late is on time", now: ts.Add(webhooks.DefaultTolerance)},
		{name: "five minutes early is on time", now: ts.Add(-webhooks.DefaultTolerance)},
		{name: "too old", now: ts.Add(webhooks.DefaultTolerance + time.Second), want: webhooks.ErrTimestampOutOfRange},
		{name: "too new", now: ts.Add(-webhooks.DefaultTolerance - time.Second), want: webhooks.ErrTimestampOutOfRange},
		{name: "own tolerance", now: ts.Add(11 * time.Second), tolerance: 10 * time.Second, want: webhooks.ErrTimestampOutOfRange},
		{name: "missing id", now: ts, edit: del(webhooks.HeaderID), want: webhooks.ErrMissingHeader},
		{name: "missing timestamp", now: ts, edit: del(webhooks.HeaderTimestamp), want: webhooks.ErrMissingHeader},
		{name: "missing signature", now: ts, edit: del(webhooks.HeaderSignature), want: webhooks.ErrMissingHeader},
		{name: "timestamp in milliseconds is far off", now: ts, edit: set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.UnixMilli(), 10)), want: webhooks.ErrTimestampOutOfRange},
		{name: "timestamp not a number", now: ts, edit: set(webhooks.HeaderTimestamp, "2027-03-01T09:00:00Z"), want: webhooks.ErrInvalidTimestamp},
		{name: "timestamp at the end of int64", now: ts, edit: set(webhooks.HeaderTimestamp, "-9223372036854775808"), want: webhooks.ErrTimestampOutOfRange},
		{name: "other id", now: ts, edit: set(webhooks.HeaderID, "evt_4"), want: webhooks.ErrNoMatchingSignature},
		{name: "tampered body", now: ts, edit: func(http.Header) []byte { return []byte(`{"a":2}`) }, want: webhooks.ErrNoMatchingSignature},
		{name: "unknown version only", now: ts, edit: set(webhooks.HeaderSignature, strings.Replace(good, "v1,", "v2,", 1)), want: webhooks.ErrNoMatchingSignature},
		{name: "garbage before a good signature", now: ts, edit: set(webhooks.HeaderSignature, "v1,!!! v1a,xyz nonsense "+good)},
		{name: "signature on a second header line", now: ts, edit: func(h http.Header) []byte {
			h.Set(webhooks.HeaderSignature, "v1,AAAA")
			h.Add(webhooks.HeaderSignature, good)
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := headers("evt_3", ts, good)
			b := body
			if tc.edit != nil {
				if nb := tc.edit(h); nb != nil {
					b = nb
				}
			}
			err := webhooks.Verify([]webhooks.Secret{secret}, h, b, tc.now, tc.tolerance)
			if tc.want == nil && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
		})
	}
}

func del(name string) func(http.Header) []byte {
	return func(h http.Header) []byte { h.Del(name); return nil }
}

func set(name, value string) func(http.Header) []byte {
	return func(h http.Header) []byte { h.Set(name, value); return nil }
}

// A secret that was never parsed signs nothing: an empty HMAC key would
// make a signature anyone can forge.
func TestSignSkipsZeroSecrets(t *testing.T) {
	t.Parallel()
	if sig := webhooks.Sign([]webhooks.Secret{{}}, "evt", time.Unix(0, 0), nil); sig != "" {
		t.Fatalf("Sign with a zero secret = %q, want none", sig)
	}
	if err := webhooks.Verify([]webhooks.Secret{{}}, headers("evt", time.Unix(0, 0), "v1,"), nil, time.Unix(0, 0), 0); !errors.Is(err, webhooks.ErrNoMatchingSignature) {
		t.Fatalf("Verify with a zero secret: %v", err)
	}
}
