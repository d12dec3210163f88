package store

import (
	"context"
	"sync"
	"time"
)

// PlacesCache keeps the store's capacity counts for a short time, so that
// the public definition and the hosted page, read by every visitor at a
// peak, cost no store query per visitor. It is only ever a display: the
// store's guarded update decides places.
type PlacesCache struct {
	src interface {
		Capacities(ctx context.Context) (map[string]Capacity, error)
	}
	now func() time.Time
	ttl time.Duration

	mu   sync.Mutex
	at   time.Time
	data map[string]Capacity
}

// NewPlacesCache reads src at most once per ttl.
func NewPlacesCache(src interface {
	Capacities(ctx context.Context) (map[string]Capacity, error)
}, now func() time.Time, ttl time.Duration) *PlacesCache {
	return &PlacesCache{src: src, now: now, ttl: ttl}
}

// Places returns a form's counts, and false when the store could not be
// read: better to say nothing than something wrong. A form the store has
// no row for has taken nothing.
func (c *PlacesCache) Places(ctx context.Context, form string) (Capacity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil || c.now().Sub(c.at) > c.ttl {
		data, err := c.src.Capacities(ctx)
		if err != nil {
			return Capacity{}, false
		}
		c.data, c.at = data, c.now()
	}
	return c.data[form], true
}
