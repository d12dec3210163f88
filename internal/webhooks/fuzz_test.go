package webhooks_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/webhooks"
)

// What a receiver answers is untrusted: whatever the bytes, the excerpt
// is short, valid UTF-8 and free of control characters.
func FuzzExcerpt(f *testing.F) {
	for _, seed := range []string{"", "ok", "\xff\xfe", "a\x00b\x1b[2J", "\u202egnp.exe", strings.Repeat("é", 200), strings.Repeat(" ", 300) + "x"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkExcerpt(t, webhooks.Excerpt(b))
	})
}

// Retry-After is untrusted: the wait is never negative nor over 24h.
func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{"", "7", "-1", "1e9", "99999999999999999999", "Mon, 01 Mar 2027 09:01:30 GMT", "Sunday, 28-Feb-27 09:00:00 GMT"} {
		f.Add(seed)
	}
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := webhooks.ParseRetryAfter(v, now); d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseRetryAfter(%q) = %s", v, d)
		}
	})
}

// Verify reads untrusted headers: it never panics, accepts what Sign
// made for the same secrets, and refuses it for a changed body.
func FuzzVerify(f *testing.F) {
	f.Add("evt_1", int64(1_800_000_000), []byte(`{"a":1}`), "v1,AAAA")
	f.Add(" ", int64(-1), []byte{}, "v1a,x v1, v1,,,")
	f.Add("evt.2.x", int64(9_000_000_000_000_000_000), []byte("\x00"), "")
	secrets := []webhooks.Secret{mustSecret(f, specSecret), mustSecret(f, secretOf(64))}
	f.Fuzz(func(t *testing.T, id string, unix int64, body []byte, sig string) {
		ts := time.Unix(unix, 0)
		h := http.Header{}
		h.Set(webhooks.HeaderID, id)
		h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(unix, 10))
		h.Set(webhooks.HeaderSignature, sig)
		_ = webhooks.Verify(secrets, h, body, ts, 0)

		h = headers(id, ts, webhooks.Sign(secrets[1:], id, ts, body))
		err := webhooks.Verify(secrets, h, body, ts, 0)
		if strings.TrimSpace(id) != "" && err != nil {
			t.Fatalf("Verify of a fresh signature: %v", err)
		}
		if err := webhooks.Verify(secrets, h, append(body, '!'), ts, 0); err == nil {
			t.Fatal("Verify accepted a changed body")
		}
	})
}
