package intake

import (
	"fmt"
	"testing"
	"time"
)

// The limiter keeps at most its bound of buckets whatever the number of
// clients, forgetting the least recently used: a client that keeps
// sending keeps its (empty) bucket through a flood of new ones.
func TestLimiterIsBounded(t *testing.T) {
	t.Parallel()
	l := newLimiter(64) // 2 a shard
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const perSecond, burst = 1.0 / 3600, 1
	if ok, _ := l.allow("busy", now, perSecond, burst); !ok {
		t.Fatal("the first request of a client refused")
	}
	for i := range 10_000 {
		// The busy client asks again between the others: refused each
		// time, since its bucket is remembered.
		if ok, _ := l.allow("busy", now, perSecond, burst); ok {
			t.Fatalf("the busy client let through after %d other clients: its bucket was forgotten", i)
		}
		l.allow(fmt.Sprintf("client-%d", i), now, perSecond, burst)
		if n := l.size(); n > 64 {
			t.Fatalf("%d buckets after %d clients, bound 64", n, i+2)
		}
	}
}
