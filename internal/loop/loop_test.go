package loop_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/loop"
	"github.com/formd/formd/internal/poll"
)

func TestEveryCallsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Every(ctx, time.Millisecond, func() { calls.Add(1) })
	}()
	poll.Until(t, "three calls", 10*time.Second, func() bool { return calls.Load() >= 3 })
	cancel()
	<-done
	after := calls.Load()
	poll.Holds(t, "no call after Every returned", 20*time.Millisecond, func() bool { return calls.Load() == after })
}

func TestEveryReturnsAtOnceForAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	loop.Every(ctx, time.Hour, func() { t.Error("fn called for an ended context") })
}
