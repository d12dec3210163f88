package pgstore

import (
	"context"
	"strconv"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.FormPurge = (*Store)(nil)

// pgPH is the dialect's numbered placeholder.
func pgPH(n int) string { return "$" + strconv.Itoa(n) }

// FormContents counts what deleting the form would erase.
func (s *Store) FormContents(ctx context.Context, form string) (store.FormContents, error) {
	c := store.FormContents{Entries: map[string]int64{}}
	rows, err := s.pool.Query(ctx, store.FormEntryStatusQuery(pgPH), form)
	if err != nil {
		return c, classify("count the form's entries", err)
	}
	defer rows.Close()
	if err := store.CountEntries(rows, c.Entries); err != nil {
		return c, classify("count the form's entries", err)
	}
	if err := s.pool.QueryRow(ctx, store.FormContentsQuery(pgPH), form).Scan(&c.Files, &c.PendingDeliveries, &c.DeadLetters, &c.Drafts, &c.Checkins); err != nil {
		return c, classify("count what the form holds", err)
	}
	return c, nil
}

// PurgeForm deletes a chunk of what the form holds (store.FormPurge).
func (s *Store) PurgeForm(ctx context.Context, form string, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	total := 0
	err := s.inTx(ctx, "delete form "+form, func(tx pgx.Tx) error {
		total = 0
		now := micro(s.now())
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS purging (id text PRIMARY KEY) ON COMMIT DELETE ROWS`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM purging`); err != nil {
			return err
		}
		sel := store.PurgeSelect(pgPH)
		tag, err := tx.Exec(ctx, sel.SQL, sel.Bind(now, form, limit)...)
		if err != nil {
			return err
		}
		entries := int(tag.RowsAffected())
		if entries > 0 {
			for _, st := range store.PurgeEntryStatements(pgPH) {
				if _, err := tx.Exec(ctx, st.SQL, st.Bind(now, form, limit)...); err != nil {
					return err
				}
			}
			total = entries
		}
		if entries < limit {
			for _, st := range store.PurgeFormStatements(pgPH) {
				tag, err := tx.Exec(ctx, st.SQL, st.Bind(now, form, limit)...)
				if err != nil {
					return err
				}
				total += int(tag.RowsAffected())
			}
		}
		return nil
	})
	return total, err
}
