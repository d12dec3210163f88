package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.Budgets = (*Store)(nil)

// budgetPrune bounds the ended windows one call deletes.
const budgetPrune = 100

// TakeBudgets counts the takes, all or none (see store.Budgets). Each is
// a guarded upsert: a new window starts at 1, the same window counts on
// while under its limit, and a row not written is a refusal.
func (s *Store) TakeBudgets(ctx context.Context, takes []store.Take, now time.Time) (int, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return -1, classify("take budgets: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for i, t := range takes {
		if t.Window <= 0 || t.Window > store.MaxBudgetWindow {
			return -1, fmt.Errorf("take budget %s: window %s is not in (0, %s]", t.Key, t.Window, store.MaxBudgetWindow)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO budgets(key, until, n) VALUES (?1, ?2, 1)
			ON CONFLICT(key) DO UPDATE SET n = CASE WHEN budgets.until = excluded.until THEN budgets.n + 1 ELSE 1 END, until = excluded.until
			WHERE budgets.until != excluded.until OR budgets.n < ?3`,
			t.Key, store.WindowEnd(now, t.Window).UnixMicro(), t.Limit)
		if err != nil {
			return -1, classify("take budget", err)
		}
		if n, _ := res.RowsAffected(); n == 0 || t.Limit < 1 {
			return i, nil // rolled back: nothing counted
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM budgets WHERE key IN (SELECT key FROM budgets WHERE until <= ? LIMIT ?)`,
		now.UnixMicro(), budgetPrune); err != nil {
		return -1, classify("take budgets: prune", err)
	}
	if err := tx.Commit(); err != nil {
		return -1, classify("take budgets: commit", err)
	}
	return -1, nil
}
