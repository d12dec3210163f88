package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

type countingCapacities struct {
	calls atomic.Int32
	data  map[string]store.Capacity
	err   error
}

func (c *countingCapacities) Capacities(context.Context) (map[string]store.Capacity, error) {
	c.calls.Add(1)
	return c.data, c.err
}

func TestPlacesCache(t *testing.T) {
	t.Parallel()
	src := &countingCapacities{data: map[string]store.Capacity{"fair": {Taken: 1}}}
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	c := store.NewPlacesCache(src, func() time.Time { return now }, time.Second)
	ctx := context.Background()
	for range 5 {
		c.Places(ctx, "fair")
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("%d store reads within a second, want 1", n)
	}
	now = now.Add(1100 * time.Millisecond)
	if got, ok := c.Places(ctx, "fair"); !ok || got.Taken != 1 {
		t.Fatalf("got %+v %v", got, ok)
	}
	if n := src.calls.Load(); n != 2 {
		t.Fatalf("%d store reads, want 2", n)
	}
	if got, ok := c.Places(ctx, "new-form"); !ok || got.Taken != 0 {
		t.Fatalf("a form without a row: %+v %v, want 0 taken", got, ok)
	}
	failing := store.NewPlacesCache(&countingCapacities{err: errors.New("store down")}, func() time.Time { return now }, time.Second)
	if _, ok := failing.Places(ctx, "fair"); ok {
		t.Fatal("places reported while the store fails")
	}
}
