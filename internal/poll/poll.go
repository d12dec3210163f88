// Package poll lets a test wait for something that happens on its own
// time (a background worker, another process, a remote server): it checks
// a condition until it holds or a deadline passes, instead of sleeping for
// a guessed while, and a failure says what was awaited.
//
// It is for tests only (it takes a testing.TB); call it from the test's
// own goroutine, as t.Fatal requires.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Until checks cond, at once and then at short intervals, until it returns
// true. If timeout passes first, it fails t with "timed out after … waiting
// for what".
func Until(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if err := wait(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}); err != nil {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// UntilNil is Until for a check that can say what it saw instead: it calls
// check until it returns nil, and on timeout fails t with what and the
// last error, such as "backlog is 3, want 0".
func UntilNil(t testing.TB, what string, timeout time.Duration, check func() error) {
	t.Helper()
	if err := wait(timeout, check); err != nil {
		t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// Holds checks that cond stays true for the whole of d, failing t with
// what as soon as it does not: the way to show that nothing more arrives
// (a second delivery, a second dead letter) once the expected has.
func Holds(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	for interval := firstInterval; ; interval = next(interval) {
		if !cond() {
			t.Fatalf("%s: no longer so after %v of %v", what, time.Since(start).Round(time.Millisecond), d)
		}
		left := d - time.Since(start)
		if left <= 0 {
			return
		}
		time.Sleep(min(interval, left))
	}
}

// The first check is immediate; the pause between checks then doubles from
// firstInterval to maxInterval, so a quick condition is seen quickly and a
// slow one (a process start, an HTTP scrape) is not hammered.
const (
	firstInterval = 2 * time.Millisecond
	maxInterval   = 50 * time.Millisecond
)

func next(d time.Duration) time.Duration { return min(2*d, maxInterval) }

var errNotYet = errors.New("not yet")

// wait calls check until it returns nil or timeout passes, and returns the
// last error.
func wait(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for interval := firstInterval; ; interval = next(interval) {
		err := check()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		time.Sleep(min(interval, left))
	}
}
