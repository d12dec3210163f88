package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// Two instances on one store (two Stores, as two processes): an upload's
// lock is one instance's at a time; the other asking for it reaches the
// holder; the lock goes with Unlock, and with the holder's connection
// when its store closes (an instance that dies), reported lost.
func TestUploadLocks(t *testing.T) {
	u := pgtest.URL(t)
	a, b := open(t, u), open(t, u)
	t.Cleanup(func() { b.Close() })
	la, lb := a.UploadLocks(), b.UploadLocks()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	asked := make(chan string, 4)
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
	// A's listener may not be listening yet: ask until it hears.
	for heard := false; !heard; {
		if err := lb.Ask(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-asked:
			if id != "u1" {
				t.Fatalf("A was asked for %q", id)
			}
			heard = true
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("A never heard B ask for u1")
		}
	}
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
		t.Fatal("A's lock was not reported lost with its connection")
	}
	for {
		ok, _, err := lb.TryLock(ctx, "u3")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("u3 stayed locked after A's connection closed")
		}
	}
}
