package loadtest

import (
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		samples       []time.Duration
		p50, p99, max time.Duration
	}{
		{name: "empty"},
		{name: "one", samples: []time.Duration{5 * time.Millisecond}, p50: 5 * time.Millisecond, p99: 5 * time.Millisecond, max: 5 * time.Millisecond},
		{name: "exact under 64µs", samples: []time.Duration{10 * time.Microsecond, 20 * time.Microsecond, 30 * time.Microsecond},
			p50: 20 * time.Microsecond, p99: 30 * time.Microsecond, max: 30 * time.Microsecond},
		{name: "1 to 100ms", samples: ramp(time.Millisecond, 100), p50: 50 * time.Millisecond, p99: 99 * time.Millisecond, max: 100 * time.Millisecond},
		{name: "one slow outlier", samples: append(ramp(time.Millisecond, 99), 10*time.Second),
			p50: 50 * time.Millisecond, p99: 99 * time.Millisecond, max: 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h histogram
			for _, s := range tc.samples {
				h.record(s)
			}
			near := func(what string, got, want time.Duration) {
				// Buckets are at most 1/32 wide.
				if d := got - want; d < -want/30 || d > want/30 {
					t.Errorf("%s = %s, want %s (±3%%)", what, got, want)
				}
			}
			near("p50", h.quantile(0.5), tc.p50)
			near("p99", h.quantile(0.99), tc.p99)
			if got := time.Duration(h.max.Load()) * time.Microsecond; got != tc.max {
				t.Errorf("max = %s, want %s exactly", got, tc.max)
			}
		})
	}
}

// Every bucket's middle maps back to the bucket.
func TestBucketsRoundTrip(t *testing.T) {
	t.Parallel()
	for i := range histBuckets {
		if got := bucketOf(bucketMid(i)); got != i {
			t.Fatalf("bucketOf(bucketMid(%d) = %d) = %d", i, bucketMid(i), got)
		}
	}
}

func ramp(step time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * step
	}
	return out
}
