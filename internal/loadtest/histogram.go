package loadtest

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram records durations in microseconds, lock-free, in log-linear
// buckets: exact below 64µs, then 32 buckets per power of two (at most
// about 3% off). Its memory is fixed whatever the number of samples.
type histogram struct {
	counts [histBuckets]atomic.Int64
	n      atomic.Int64
	max    atomic.Int64
}

const (
	histSub     = 32
	histBuckets = 64 + 40*histSub // up to 2^45µs, more than a year
)

func bucketOf(us int64) int {
	if us < 64 {
		return int(max(us, 0))
	}
	e := bits.Len64(uint64(us)) - 6 // us >> e is in [32, 64)
	i := 64 + (e-1)*histSub + int(us>>e) - histSub
	return min(i, histBuckets-1)
}

// bucketMid is the middle of a bucket's range, what a percentile in it
// reports.
func bucketMid(i int) int64 {
	if i < 64 {
		return int64(i)
	}
	e := (i-64)/histSub + 1
	lo := int64((i-64)%histSub+histSub) << e
	return lo + (int64(1)<<e)/2
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	h.counts[bucketOf(us)].Add(1)
	h.n.Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// quantile is the q-quantile (0 < q ≤ 1); 0 without samples.
func (h *histogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			// Never report more than the largest sample.
			return time.Duration(min(bucketMid(i), h.max.Load())) * time.Microsecond
		}
	}
	return time.Duration(h.max.Load()) * time.Microsecond
}

// Latency is a latency summary, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func (h *histogram) summary() Latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Latency{
		Count: h.n.Load(),
		P50:   ms(h.quantile(0.50)),
		P90:   ms(h.quantile(0.90)),
		P99:   ms(h.quantile(0.99)),
		Max:   ms(time.Duration(h.max.Load()) * time.Microsecond),
	}
}
