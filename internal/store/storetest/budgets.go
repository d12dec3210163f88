package storetest

import (
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// testBudgets pins each edge of TakeBudgets: counts up to the limit in a
// window and refuses past it; several takes count all or none; the next
// window starts again; a bad window is an error.
func testBudgets(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	hour := func(key string, limit int) store.Take { return store.Take{Key: key, Window: time.Hour, Limit: limit} }
	take := func(at time.Time, want int, takes ...store.Take) {
		t.Helper()
		got, err := s.TakeBudgets(ctx, takes, at)
		if err != nil || got != want {
			t.Fatalf("TakeBudgets(%+v) at %s = %d, %v; want %d", takes, at.Format(time.TimeOnly), got, err, want)
		}
	}
	take(now, -1, hour("a", 2))
	take(now.Add(time.Minute), -1, hour("a", 2))
	take(now.Add(2*time.Minute), 0, hour("a", 2)) // the third in the hour
	// All or none: b is counted only with c, and c refuses the second time.
	take(now, -1, hour("b", 3), hour("c", 1))
	take(now, 1, hour("b", 3), hour("c", 1))
	take(now, -1, hour("b", 3))
	take(now, -1, hour("b", 3)) // b's third: the refused pair counted none
	take(now, 0, hour("b", 3))
	// A limit below one takes nothing.
	take(now, 0, hour("z", 0))
	// The next window (aligned to the hour) starts again.
	next := now.Truncate(time.Hour).Add(time.Hour)
	take(next.Add(-time.Microsecond), 0, hour("a", 2))
	take(next, -1, hour("a", 2))
	take(next, -1, hour("a", 2))
	take(next, 0, hour("a", 2))
	// Keys are apart: another key has its own count.
	take(next, -1, store.Take{Key: "a-other", Window: time.Minute, Limit: 1})
	if _, err := s.TakeBudgets(ctx, []store.Take{{Key: "x", Window: 0, Limit: 1}}, now); err == nil {
		t.Fatal("a window of 0 was taken")
	}
	if _, err := s.TakeBudgets(ctx, []store.Take{{Key: "x", Window: 48 * time.Hour, Limit: 1}}, now); err == nil {
		t.Fatal("a window over MaxBudgetWindow was taken")
	}
}
