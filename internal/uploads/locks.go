package uploads

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/uploads/tier"
	"github.com/tus/tusd/v2/pkg/handler"
)

// CrossLocks are named locks that every instance of a deployment sees,
// so that an upload continued through any instance is written by one
// request at a time (its HEAD reads an offset no PATCH is moving). The
// PostgreSQL store has them as session-level advisory locks on a
// connection of their own (pgstore.UploadLocks): a lock goes with
// Unlock, and with the connection if it breaks or the instance dies.
type CrossLocks interface {
	// TryLock takes the lock name if no other instance holds it, and
	// says whether it did. lost is closed if the lock is lost before
	// Unlock (the connection holding it broke).
	TryLock(ctx context.Context, name string) (ok bool, lost <-chan struct{}, err error)
	// Unlock releases a lock TryLock took.
	Unlock(ctx context.Context, name string) error
	// Ask asks the instance that holds the lock name to release it.
	Ask(ctx context.Context, name string) error
	// Asked has f called with the name of each lock another instance
	// asks for (Ask), from then on.
	Asked(f func(name string))
}

// crossLockRetry is how often a request waiting for an upload's lock
// held by another instance tries again.
const crossLockRetry = 100 * time.Millisecond

// askAgain is how often a request waiting for a lock asks its holder
// again (an instance that was reconnecting its listener missed it).
const askAgain = 2 * time.Second

// crossLocker is tusd's Locker on CrossLocks. It does what tusd's memory
// locker does, across the instances: a request that wants a lock held
// asks its holder to stop (here directly, on another instance through
// Ask), tusd then keeps what the holder had received and answers it, and
// the lock is had. That is what lets a client whose connection to one
// instance hangs (a phone that changed networks) go on through another
// at once, rather than after the hung request's network timeout. A lock
// not released is waited for until the request's lock timeout (tusd's
// 20 s), then the answer is 423.
type crossLocker struct {
	locks CrossLocks
	mu    sync.Mutex
	held  map[string]*crossLock
}

func newCrossLocker(l CrossLocks) *crossLocker {
	cl := &crossLocker{locks: l, held: map[string]*crossLock{}}
	l.Asked(func(id string) {
		cl.mu.Lock()
		h := cl.held[id]
		cl.mu.Unlock()
		if h != nil {
			h.ask()
		}
	})
	return cl
}

// asked says a request holding the upload's lock here was asked to let
// go. tusd loses a request to let go that comes before it reads the
// holder's body (the holder would read on, and the asker wait for the
// lock timeout): WriteChunk asks this before it reads, and stops.
func (l *crossLocker) asked(id string) bool {
	l.mu.Lock()
	h := l.held[id]
	l.mu.Unlock()
	return h != nil && h.wanted.Load()
}

func (l *crossLocker) UseIn(c *handler.StoreComposer) { c.UseLocker(l) }

func (l *crossLocker) NewLock(id string) (handler.Lock, error) {
	return &crossLock{l: l, id: id}, nil
}

type crossLock struct {
	l       *crossLocker
	id      string
	release func()
	wanted  atomic.Bool   // another request asked for the lock
	done    chan struct{} // closed at Unlock, or when the lock was not had
}

// ask asks the holder to let go.
func (k *crossLock) ask() {
	k.wanted.Store(true)
	k.release()
}

func (k *crossLock) Lock(ctx context.Context, requestRelease func()) error {
	l := k.l
	var asked time.Time
	for {
		l.mu.Lock()
		if h := l.held[k.id]; h != nil {
			l.mu.Unlock()
			h.ask()
			select {
			case <-h.done:
				continue
			case <-ctx.Done():
				return handler.ErrFileLocked
			}
		}
		k.release, k.done = requestRelease, make(chan struct{})
		l.held[k.id] = k
		l.mu.Unlock()

		ok, lost, err := l.locks.TryLock(ctx, k.id)
		if err == nil && ok {
			go func(done chan struct{}) {
				select {
				case <-lost:
					requestRelease()
				case <-done:
				}
			}(k.done)
			return nil
		}
		l.drop(k)
		if err == nil && time.Since(asked) > askAgain {
			err = l.locks.Ask(ctx, k.id)
			asked = time.Now()
		}
		if err != nil {
			if ctx.Err() != nil {
				return handler.ErrFileLocked
			}
			return tier.TusError(fmt.Errorf("lock upload %s: %w: %w", k.id, ErrLocksUnavailable, err))
		}
		select {
		case <-time.After(crossLockRetry):
		case <-ctx.Done():
			return handler.ErrFileLocked
		}
	}
}

func (k *crossLock) Unlock() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := k.l.locks.Unlock(ctx, k.id)
	k.l.drop(k)
	return err
}

func (l *crossLocker) drop(k *crossLock) {
	l.mu.Lock()
	if l.held[k.id] == k {
		delete(l.held, k.id)
	}
	close(k.done)
	l.mu.Unlock()
}
