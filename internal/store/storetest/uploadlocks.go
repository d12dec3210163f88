package storetest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
)

// LockingStore is a store with cross-instance upload locks
// (store.UploadLocker) that can be closed, as an instance that dies is.
type LockingStore interface {
	store.UploadLocker
	io.Closer
}

// LockOpener opens the same store as a new instance would, each call a
// store of its own (its own connections).
type LockOpener func(t *testing.T) func() LockingStore

// RunUploadLocks pins the rules of store.UploadLocks on two instances of
// one store: an upload's lock is one instance's at a time; the other
// asking for it reaches the holder; the lock goes with Unlock, and with
// the holder when its store closes (an instance that dies), reported
// lost. Run it for every driver whose drivers.Driver has UploadLocks.
func RunUploadLocks(t *testing.T, open LockOpener) {
	t.Run("UploadLocks", func(t *testing.T) {
		t.Parallel()
		newStore := open(t)
		a, b := newStore(), newStore()
		t.Cleanup(func() { b.Close() })
		la, lb := a.UploadLocks(), b.UploadLocks()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		asked := make(chan string, 64)
		la.Asked(func(id string) { asked <- id })

		ok, _, err := la.TryLock(ctx, "u1")
		if err != nil || !ok {
			t.Fatalf("A takes u1: %v %v", ok, err)
		}
		if ok, _, err := lb.TryLock(ctx, "u1"); err != nil || ok {
			t.Fatalf("B takes u1 that A holds: %v %v", ok, err)
		}
		if ok, _, err := lb.TryLock(ctx, "u2"); err != nil || !ok {
			t.Fatalf("B takes u2: %v %v", ok, err)
		}
		// A may not be listening yet: ask until it hears.
		poll.Until(t, "A to hear B ask for u1", 20*time.Second, func() bool {
			if err := lb.Ask(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			select {
			case id := <-asked:
				if id != "u1" {
					t.Fatalf("A was asked for %q", id)
				}
				return true
			default:
				return false
			}
		})
		if err := la.Unlock(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := lb.TryLock(ctx, "u1"); err != nil || !ok {
			t.Fatalf("B takes u1 after A let go: %v %v", ok, err)
		}
		if err := lb.Unlock(ctx, "u1"); err != nil {
			t.Fatal(err)
		}

		// A holds u3 and its store closes: the lock is lost and B has it.
		ok, lost, err := la.TryLock(ctx, "u3")
		if err != nil || !ok {
			t.Fatalf("A takes u3: %v %v", ok, err)
		}
		a.Close()
		select {
		case <-lost:
		case <-ctx.Done():
			t.Fatal("A's lock was not reported lost with its store")
		}
		poll.UntilNil(t, "B to take u3 once A's store closed", 20*time.Second, func() error {
			ok, _, err := lb.TryLock(ctx, "u3")
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return errors.New("u3 is still locked")
			}
			return nil
		})
	})
}
