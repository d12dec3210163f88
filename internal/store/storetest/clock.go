package storetest

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told, for the suites that reason
// about time and for the tests of what runs on a store with its clock
// (the outbox's).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a Clock that reads at until it is moved.
func NewClock(at time.Time) *Clock { return &Clock{now: at} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
