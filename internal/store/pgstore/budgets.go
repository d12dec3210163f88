package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formd/formd/internal/store"
)

var _ store.Budgets = (*Store)(nil)

// budgetPrune bounds the ended windows one call deletes.
const budgetPrune = 100

// errOverBudget rolls a refused take's transaction back.
type errOverBudget int

func (e errOverBudget) Error() string { return fmt.Sprintf("budget %d refused", int(e)) }

// TakeBudgets counts the takes, all or none (see store.Budgets). Each is
// a guarded upsert: a new window starts at 1, the same window counts on
// while under its limit, and a row not written is a refusal. The row
// lock orders instances taking the same key.
func (s *Store) TakeBudgets(ctx context.Context, takes []store.Take, now time.Time) (int, error) {
	for _, t := range takes {
		if t.Window <= 0 || t.Window > store.MaxBudgetWindow {
			return -1, fmt.Errorf("take budget %s: window %s is not in (0, %s]", t.Key, t.Window, store.MaxBudgetWindow)
		}
	}
	refused := -1
	err := s.inTx(ctx, "take budgets", func(tx pgx.Tx) error {
		refused = -1
		for i, t := range takes {
			tag, err := tx.Exec(ctx, `INSERT INTO budgets(key, until, n) VALUES ($1, $2, 1)
				ON CONFLICT (key) DO UPDATE SET n = CASE WHEN budgets.until = excluded.until THEN budgets.n + 1 ELSE 1 END, until = excluded.until
				WHERE budgets.until <> excluded.until OR budgets.n < $3`,
				t.Key, micro(store.WindowEnd(now, t.Window)), t.Limit)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 || t.Limit < 1 {
				refused = i
				return errOverBudget(i) // rolled back: nothing counted
			}
		}
		_, err := tx.Exec(ctx, `DELETE FROM budgets WHERE key IN (SELECT key FROM budgets WHERE until <= $1 LIMIT $2)`, micro(now), budgetPrune)
		return err
	})
	if refused >= 0 {
		return refused, nil
	}
	return -1, err
}
