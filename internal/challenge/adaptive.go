package challenge

import (
	"container/list"
	"sync"
	"time"
)

// Adaptive raises the difficulty for an address that asks for many
// challenges in a short time, and for no one else. It counts per
// instance, in memory: a burst spread over several instances is slowed on
// each by its own share, which is enough to make scripted sign-ups costly
// without a store write per challenge.
//
// The addresses it is given are the callers' bucket keys (intake.ClientKey:
// an IPv6 client is counted by its /64, so walking its own network's
// addresses does not reset its count).
//
// Memory is bounded: at most MaxAddrs addresses are counted; when a new
// one comes and the table is full, the least recently counted address is
// forgotten (its next challenge is at the base again, never harder), so a
// flood of new addresses cannot push out the one bursting now.
type Adaptive struct {
	// Window is the time over which an address's challenges are counted.
	Window time.Duration
	// Free is how many challenges an address gets at the base difficulty
	// in one window; each further Free doubles it.
	Free int
	// MaxFactor caps the raise (a power of two).
	MaxFactor int64
	// MaxAddrs bounds the addresses counted.
	MaxAddrs int

	mu    sync.Mutex
	addrs map[string]*list.Element // of *count
	lru   list.List                // most recently counted at the front
}

type count struct {
	addr  string
	start time.Time
	n     int
}

// NewAdaptive counts with formd's defaults: 10 challenges a minute at the
// base, doubling per further 10, at most 64 times the base, for up to
// 10,000 addresses (about a megabyte).
func NewAdaptive() *Adaptive {
	return &Adaptive{Window: time.Minute, Free: 10, MaxFactor: 64, MaxAddrs: 10_000}
}

// Next counts one challenge for addr at now and returns the difficulty it
// gets: base, or base times a power of two under a burst, at most max.
func (a *Adaptive) Next(addr string, base, max int64, now time.Time) int64 {
	f := a.count(addr, now)
	d := base * f
	if d > max || d/f != base {
		return max
	}
	return d
}

// Factor is the raise addr has now, without counting.
func (a *Adaptive) Factor(addr string, now time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	el, ok := a.addrs[addr]
	if !ok {
		return 1
	}
	c := el.Value.(*count)
	if now.Sub(c.start) >= a.Window {
		return 1
	}
	return a.factor(c.n)
}

func (a *Adaptive) count(addr string, now time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.addrs == nil {
		a.addrs = make(map[string]*list.Element)
	}
	var c *count
	if el, ok := a.addrs[addr]; ok {
		a.lru.MoveToFront(el)
		c = el.Value.(*count)
	} else {
		for len(a.addrs) >= max(a.MaxAddrs, 1) {
			oldest := a.lru.Back()
			a.lru.Remove(oldest)
			delete(a.addrs, oldest.Value.(*count).addr)
		}
		c = &count{addr: addr, start: now}
		a.addrs[addr] = a.lru.PushFront(c)
	}
	if now.Sub(c.start) >= a.Window || now.Before(c.start) {
		c.start, c.n = now, 0
	}
	c.n++
	return a.factor(c.n)
}

// factor is the raise after n challenges in a window.
func (a *Adaptive) factor(n int) int64 {
	free := max(a.Free, 1)
	if n <= free {
		return 1
	}
	f := int64(1)
	for steps := (n - 1) / free; steps > 0 && f < a.MaxFactor; steps-- {
		f *= 2
	}
	return min(f, max(a.MaxFactor, 1))
}

// Len is how many addresses are counted (for tests of the bound).
func (a *Adaptive) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.addrs)
}
