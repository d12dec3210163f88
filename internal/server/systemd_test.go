package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// The watchdog pings on each tick the journal's writer answers, none
// while it does not (saying why once, in the unit's status), and says it
// serves again before it pings again. The test hands the loop its ticks
// and the writer's answers: once a tick is taken, the loop is done with
// the one before and waits for the writer's answer, so what it sent is
// all recorded.
func TestWatchdogPingsOnlyWhileTheWriterAnswers(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		sent []string
	)
	record := func(state string) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, state)
		return nil
	}
	answers := make(chan error)
	alive := func(ctx context.Context) error {
		select {
		case err := <-answers:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchdog(ctx, ticks, alive, time.Minute, record, "127.0.0.1:8080", slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { cancel(); <-done }()
	// answer gives the writer's answer to the tick in progress and returns
	// what the loop sent for it.
	answer := func(err error) []string {
		answers <- err
		ticks <- time.Now()
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
	ticks <- time.Now()
	if got := answer(nil); !slices.Equal(got, []string{"WATCHDOG=1"}) {
		t.Fatalf("a writer that answers: sent %q, want one ping", got)
	}
	stuckErr := errors.New("no answer: context deadline exceeded")
	got := answer(stuckErr)
	if len(got) != 1 || got[0] != "STATUS=journal writer not answering: "+stuckErr.Error() {
		t.Fatalf("a stuck writer: sent %q, want the status alone", got)
	}
	for range 3 {
		if got := answer(stuckErr); len(got) != 0 {
			t.Fatalf("a writer still stuck: sent %q, want nothing", got)
		}
	}
	if got := answer(nil); !slices.Equal(got, []string{"STATUS=serving on 127.0.0.1:8080", "WATCHDOG=1"}) {
		t.Fatalf("a writer that answers again: sent %q, want the status, then a ping", got)
	}
	if got := answer(nil); !slices.Equal(got, []string{"WATCHDOG=1"}) {
		t.Fatalf("then: sent %q, want one ping", got)
	}
}
