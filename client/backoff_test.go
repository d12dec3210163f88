package client

import (
	"testing"
	"time"
)

// The backoff ceiling doubles from MinBackoff up to MaxBackoff, the delay
// is drawn under it (full jitter), and a Retry-After is a floor.
func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		jitter     func(time.Duration) time.Duration
		want       time.Duration
	}{
		{name: "first failure, top of the jitter", n: 1, jitter: top, want: 100 * time.Millisecond},
		{name: "third failure doubles twice", n: 3, jitter: top, want: 400 * time.Millisecond},
		{name: "capped at MaxBackoff", n: 20, jitter: top, want: 2 * time.Second},
		{name: "huge n does not overflow", n: 1000, jitter: top, want: 2 * time.Second},
		{name: "bottom of the jitter", n: 5, jitter: bottom, want: 0},
		{name: "Retry-After is a floor", n: 1, retryAfter: time.Second, jitter: bottom, want: time.Second},
		{name: "Retry-After spread over half of it again", n: 1, retryAfter: time.Second, jitter: top, want: 1500 * time.Millisecond},
		{name: "a longer backoff wins over Retry-After", n: 10, retryAfter: time.Second, jitter: top, want: 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New("http://127.0.0.1:1", Options{MinBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Jitter: tc.jitter})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.backoff(tc.n, tc.retryAfter); got != tc.want {
				t.Errorf("backoff(%d, %s) = %s, want %s", tc.n, tc.retryAfter, got, tc.want)
			}
		})
	}
}

func top(n time.Duration) time.Duration  { return n }
func bottom(time.Duration) time.Duration { return 0 }

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 1 ", time.Second},
		{"-5", 0},
		{"soon", 0},
		{"Mon, 01 Mar 2027 09:00:30 GMT", 30 * time.Second},
		{"Mon, 01 Mar 2027 08:00:00 GMT", 0},
		{"86400", MaxRetryAfter},
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestValidKey(t *testing.T) {
	t.Parallel()
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'k'
	}
	tests := []struct {
		key  string
		want bool
	}{
		{"a", true},
		{"k-1/2:3", true},
		{string(long[:255]), true},
		{string(long), false},
		{"", false},
		{"with space", false},
		{"tab\t", false},
		{"é", false},
		{NewKey(), true},
	}
	for _, tc := range tests {
		if got := ValidKey(tc.key); got != tc.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
