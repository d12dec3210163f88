package accounts

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/problem"
)

// TestHashingSlotsBounded: with every hashing slot taken, a password
// check waits at most HashWait and then answers ErrBusy, which is 503
// overloaded with Retry-After; a cancelled request stops waiting at once.
func TestHashingSlotsBounded(t *testing.T) {
	t.Parallel()
	s := New(nil, Config{HashWait: time.Millisecond, Password: Params{Memory: 64, Time: 1, Threads: 1}})
	for range cap(s.hashing) {
		s.hashing <- struct{}{}
	}
	_, err := s.hash(context.Background(), "correct horse battery staple")
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("hash with every slot taken: %v, want ErrBusy", err)
	}
	if pr := problem.From(err); pr.Status != 503 || pr.RetryAfter == 0 {
		t.Fatalf("ErrBusy answers %d with Retry-After %d, want 503 with Retry-After", pr.Status, pr.RetryAfter)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Service{cfg: Config{HashWait: time.Hour}.withDefaults(), hashing: s.hashing}).verify(ctx, "", "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled check: %v, want context.Canceled", err)
	}
	<-s.hashing
	if _, err := s.hash(context.Background(), "correct horse battery staple"); err != nil {
		t.Fatalf("with a slot free: %v", err)
	}
}

// TestHashingMemoryBound is issue 30's measurement: a burst of failing
// sign-ins took the RSS from 58 MB to about 780 MB, one 64 MiB hash per
// core at once. With HashSlots (2 by default), 24 checks at once hold at
// most 2 hashes' memory; Go's collector lets the garbage of finished
// hashes reach the live heap again and more while it runs (2 to 3 times
// the live hashes were measured), so the heap grows by less than
// 4 × HashSlots × Memory: 256 MiB here at 32 MiB a hash, 512 MiB with
// the defaults (the figure in docs/console.md). The growth is the peak of the Go
// heap over the burst, sampled.
func TestHashingMemoryBound(t *testing.T) {
	const perHash = 32 << 20
	params := Params{Memory: perHash >> 10, Time: 1, Threads: 1}
	s := New(nil, Config{HashWait: time.Minute, HashSlots: 2, Password: params})
	phc, err := HashPassword("correct horse battery staple", params)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			if ok, err := s.verify(context.Background(), phc, "a wrong guess of a password"); ok || err != nil {
				t.Errorf("a wrong password: %v %v", ok, err)
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled
	grew := int64(peak.Load()) - int64(before.HeapAlloc)
	const bound = 4 * 2 * perHash
	t.Logf("heap grew by %d MiB over 24 checks at once (bound %d MiB)", grew>>20, bound>>20)
	if grew >= bound {
		t.Fatalf("the heap grew by %d MiB, over the bound of %d MiB", grew>>20, bound>>20)
	}
}
