package intake

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// limiter is a token bucket per (client IP, form): rate tokens a second up
// to burst. Idle buckets are swept so memory follows the active clients.
type limiter struct {
	seed   maphash.Seed
	shards [32]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
	full   time.Duration // time to refill from empty: idle longer, it holds nothing
}

func newLimiter() *limiter {
	l := &limiter{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*bucket{}
	}
	return l
}

// allow takes a token for key at now. When there is none it says how long
// until there will be one.
func (l *limiter) allow(key string, now time.Time, perSecond float64, burst int) (bool, time.Duration) {
	return l.allowN(key, now, perSecond, burst, 1)
}

// allowN takes n tokens at once (n at most burst), or none.
func (l *limiter) allowN(key string, now time.Time, perSecond float64, burst, n int) (bool, time.Duration) {
	s := &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > time.Minute {
		s.sweep(now)
	}
	b, ok := s.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(burst), last: now, full: time.Duration(float64(burst) / perSecond * float64(time.Second))}
		s.buckets[key] = b
	}
	b.tokens = math.Min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*perSecond)
	b.last = now
	if b.tokens >= float64(n) {
		b.tokens -= float64(n)
		return true, 0
	}
	wait := time.Duration((float64(n) - b.tokens) / perSecond * float64(time.Second))
	return false, wait
}

// sweep drops buckets that have refilled: they hold no state worth keeping.
func (s *limiterShard) sweep(now time.Time) {
	s.swept = now
	for k, b := range s.buckets {
		if now.Sub(b.last) > b.full {
			delete(s.buckets, k)
		}
	}
}

// refund gives a token back to key's bucket, up to burst: the request
// that took it turned out not to count.
func (l *limiter) refund(key string, burst int) {
	s := &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	s.mu.Lock()
	if b, ok := s.buckets[key]; ok {
		b.tokens = math.Min(float64(burst), b.tokens+1)
	}
	s.mu.Unlock()
}

// refundN gives n tokens back to key's bucket, up to burst.
func (l *limiter) refundN(key string, burst, n int) {
	s := &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	s.mu.Lock()
	if b, ok := s.buckets[key]; ok {
		b.tokens = math.Min(float64(burst), b.tokens+float64(n))
	}
	s.mu.Unlock()
}
