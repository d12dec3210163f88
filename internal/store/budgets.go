package store

import (
	"context"
	"time"
)

// Take is one count against a budget: Key's count in the window of
// length Window that now falls in (windows are aligned to the Unix epoch,
// so every instance agrees on them), refused when Limit are counted
// already. Windows are at most MaxBudgetWindow.
type Take struct {
	Key    string
	Window time.Duration
	Limit  int
}

// MaxBudgetWindow bounds a Take's window: a budget's row is pruned once
// its window has ended, so longer windows would need longer rows.
const MaxBudgetWindow = 24 * time.Hour

// Budgets counts actions against limits that hold across instances (such
// as the confirmations sent to one address in an hour): the store
// decides, as it does for every other limit.
type Budgets interface {
	// TakeBudgets counts each take in one transaction, all or none: when
	// one would go over its limit nothing is counted and its index is
	// returned; -1 when all were counted. Rows of ended windows are
	// pruned as it goes.
	TakeBudgets(ctx context.Context, takes []Take, now time.Time) (refused int, err error)
}

// WindowEnd is the end of the window of length w that now falls in.
func WindowEnd(now time.Time, w time.Duration) time.Time {
	return now.Truncate(w).Add(w)
}
