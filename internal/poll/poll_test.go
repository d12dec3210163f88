package poll

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own and returns what
// it failed with ("" when it did not fail).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if msg := run(t, func(tb testing.TB) {
		Until(tb, "three checks", time.Second, func() bool { return n.Add(1) == 3 })
	}); msg != "" || n.Load() != 3 {
		t.Fatalf("a condition that comes true: %q after %d checks", msg, n.Load())
	}
	start := time.Now()
	msg := run(t, func(tb testing.TB) { Until(tb, "the impossible", 30*time.Millisecond, func() bool { return false }) })
	if !strings.Contains(msg, "waiting for the impossible") || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("a condition that never holds: %q after %v", msg, time.Since(start))
	}
}

func TestUntilNilSaysWhatItSaw(t *testing.T) {
	t.Parallel()
	msg := run(t, func(tb testing.TB) {
		UntilNil(tb, "an empty backlog", 20*time.Millisecond, func() error { return fmt.Errorf("backlog is %d", 3) })
	})
	if !strings.Contains(msg, "an empty backlog: backlog is 3") {
		t.Fatalf("message %q", msg)
	}
}

func TestHolds(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if msg := run(t, func(tb testing.TB) { Holds(tb, "quiet", 30*time.Millisecond, func() bool { return true }) }); msg != "" {
		t.Fatalf("a condition that holds: %q", msg)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatalf("returned after %v, before the period ended", time.Since(start))
	}
	var n atomic.Int32
	msg := run(t, func(tb testing.TB) { Holds(tb, "one delivery", time.Minute, func() bool { return n.Add(1) < 3 }) })
	if !strings.Contains(msg, "one delivery: no longer so") {
		t.Fatalf("a condition that stops holding: %q", msg)
	}
}
