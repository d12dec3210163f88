package intake

import (
	"container/list"
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// maxBuckets bounds the buckets one instance keeps (a few hundred bytes
// each): past it the least recently used bucket is forgotten, so a flood
// of distinct clients (a botnet, or many IPv6 networks) costs bounded
// memory. A forgotten bucket starts full again: the bound errs towards
// letting a client through, never towards refusing one.
const maxBuckets = 100_000

// limiter is a token bucket per (client key, form): rate tokens a second
// up to burst. Idle buckets are swept so memory follows the active
// clients, and each shard holds at most its share of the bound, least
// recently used out first.
type limiter struct {
	seed   maphash.Seed
	shards [32]limiterShard
}

type limiterShard struct {
	mu      sync.Mutex
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // most recently used at the front
	max     int
	swept   time.Time
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
	full   time.Duration // time to refill from empty: idle longer, it holds nothing
}

// newLimiter makes a limiter of at most limit buckets (at least one a
// shard).
func newLimiter(limit int) *limiter {
	l := &limiter{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = map[string]*list.Element{}
		l.shards[i].max = (limit + len(l.shards) - 1) / len(l.shards)
		if l.shards[i].max < 1 {
			l.shards[i].max = 1
		}
	}
	return l
}

func (l *limiter) shard(key string) *limiterShard {
	return &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
}

// allow takes a token for key at now. When there is none it says how long
// until there will be one.
func (l *limiter) allow(key string, now time.Time, perSecond float64, burst int) (bool, time.Duration) {
	return l.allowN(key, now, perSecond, burst, 1)
}

// allowN takes n tokens at once (n at most burst), or none.
func (l *limiter) allowN(key string, now time.Time, perSecond float64, burst, n int) (bool, time.Duration) {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > time.Minute {
		s.sweep(now)
	}
	var b *bucket
	if el, ok := s.buckets[key]; ok {
		s.lru.MoveToFront(el)
		b = el.Value.(*bucket)
	} else {
		for len(s.buckets) >= s.max {
			oldest := s.lru.Back()
			s.lru.Remove(oldest)
			delete(s.buckets, oldest.Value.(*bucket).key)
		}
		b = &bucket{key: key, tokens: float64(burst), last: now, full: time.Duration(float64(burst) / perSecond * float64(time.Second))}
		s.buckets[key] = s.lru.PushFront(b)
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
	for k, el := range s.buckets {
		if b := el.Value.(*bucket); now.Sub(b.last) > b.full {
			s.lru.Remove(el)
			delete(s.buckets, k)
		}
	}
}

// refund gives a token back to key's bucket, up to burst: the request
// that took it turned out not to count.
func (l *limiter) refund(key string, burst int) { l.refundN(key, burst, 1) }

// refundN gives n tokens back to key's bucket, up to burst.
func (l *limiter) refundN(key string, burst, n int) {
	s := l.shard(key)
	s.mu.Lock()
	if el, ok := s.buckets[key]; ok {
		b := el.Value.(*bucket)
		b.tokens = math.Min(float64(burst), b.tokens+float64(n))
	}
	s.mu.Unlock()
}

// size is how many buckets are kept (for tests of the bound).
func (l *limiter) size() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
