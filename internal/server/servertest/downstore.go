package servertest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/store"
)

// StoreDownWhile is an Options.WrapStore whose store cannot decide while
// down is set: Apply fails as unavailable, as with a refused connection —
// a fault the real store cannot be made to produce on demand.
func StoreDownWhile(down *atomic.Bool) func(server.Store) server.Store {
	return func(s server.Store) server.Store { return downStore{s, down} }
}

type downStore struct {
	server.Store
	down *atomic.Bool
}

func (d downStore) Apply(ctx context.Context, es []journal.Entry) ([]store.Outcome, error) {
	if d.down.Load() {
		return nil, fmt.Errorf("apply: %w", errors.Join(store.ErrUnavailable, errors.New("connection refused")))
	}
	return d.Store.Apply(ctx, es)
}
