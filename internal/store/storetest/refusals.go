package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// RefusalStore is a store that counts intake's refusals.
type RefusalStore interface {
	store.Refusals
	Close() error
}

// RunRefusals checks that refusal counts add up per form and reason,
// across hours and calls, and that a restart keeps them. newStore opens
// the same store each time it is called.
func RunRefusals(t *testing.T, newStore func(t *testing.T) func() RefusalStore) {
	t.Helper()
	ctx := context.Background()
	open := newStore(t)
	s := open()
	h := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(s RefusalStore, counts ...store.RefusalCount) {
		t.Helper()
		if err := s.AddRefusals(ctx, counts); err != nil {
			t.Fatalf("add refusals: %v", err)
		}
	}
	add(s, store.RefusalCount{Form: "f", Reason: "form-closed", Hour: h, N: 2},
		store.RefusalCount{Form: "f", Reason: "validation-failed", Hour: h, N: 1},
		store.RefusalCount{Form: "g", Reason: "form-closed", Hour: h, N: 7})
	add(s, store.RefusalCount{Form: "f", Reason: "form-closed", Hour: h.Add(time.Minute), N: 3},
		store.RefusalCount{Form: "f", Reason: "validation-failed", Hour: h.Add(2 * time.Hour), N: 4})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	got, err := s.RefusalsOf(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["form-closed"] != 5 || got["validation-failed"] != 5 {
		t.Fatalf("refusals of f: %v, want form-closed 5, validation-failed 5", got)
	}
	if got, err := s.RefusalsOf(ctx, "none"); err != nil || len(got) != 0 {
		t.Fatalf("refusals of a form with none: %v %v", got, err)
	}
}
