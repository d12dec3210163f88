package accounts

import (
	"context"
	"errors"
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
