package sqlitestore

import (
	"context"
	"errors"
	"strconv"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
)

var _ store.FormPurge = (*Store)(nil)

// sqlPH is the dialect's numbered placeholder.
func sqlPH(n int) string { return "?" + strconv.Itoa(n) }

// FormContents counts what deleting the form would erase.
func (s *Store) FormContents(ctx context.Context, form string) (store.FormContents, error) {
	c := store.FormContents{Entries: map[string]int64{}}
	rows, err := s.rdb.QueryContext(ctx, store.FormEntryStatusQuery(sqlPH), form)
	if err != nil {
		return c, classify("count the form's entries", err)
	}
	defer rows.Close()
	if err := store.CountEntries(rows, c.Entries); err != nil {
		return c, classify("count the form's entries", err)
	}
	if err := s.rdb.QueryRowContext(ctx, store.FormContentsQuery(sqlPH), form).Scan(&c.Files, &c.PendingDeliveries, &c.DeadLetters, &c.Drafts, &c.Checkins); err != nil {
		return c, classify("count what the form holds", err)
	}
	return c, nil
}

// PurgeForm deletes a chunk of what the form holds (store.FormPurge);
// after the last chunk it truncates the WAL, as Erase does, so that no
// copy of a deleted page stays there.
func (s *Store) PurgeForm(ctx context.Context, form string, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	n, err := s.purge(ctx, form, limit)
	if err != nil || n >= limit {
		return n, err
	}
	if err := sqlitedb.Truncate(ctx, s.wdb, s.schema()); err != nil && !errors.Is(err, sqlitedb.ErrCheckpointBusy) {
		return n, classify("delete form "+form+": truncate the WAL", err)
	}
	return n, nil
}

func (s *Store) purge(ctx context.Context, form string, limit int) (int, error) {
	op := "delete form " + form
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, q := range []string{`CREATE TEMP TABLE IF NOT EXISTS purging (id TEXT PRIMARY KEY)`, `DELETE FROM purging`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return 0, classify(op, err)
		}
	}
	now := micro(s.now())
	args := func(st store.PurgeStatement) []any { return st.Bind(now, form, limit) }
	sel := store.PurgeSelect(sqlPH)
	res, err := tx.ExecContext(ctx, sel.SQL, args(sel)...)
	if err != nil {
		return 0, classify(op+": select entries", err)
	}
	entries, _ := res.RowsAffected()
	total := 0
	if entries > 0 {
		for _, st := range store.PurgeEntryStatements(sqlPH) {
			if _, err := tx.ExecContext(ctx, st.SQL, args(st)...); err != nil {
				return 0, classify(op+": delete entries", err)
			}
		}
		total = int(entries)
	}
	if entries < int64(limit) {
		for _, st := range store.PurgeFormStatements(sqlPH) {
			res, err := tx.ExecContext(ctx, st.SQL, args(st)...)
			if err != nil {
				return 0, classify(op, err)
			}
			n, _ := res.RowsAffected()
			total += int(n)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM purging`); err != nil {
		return 0, classify(op, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify(op+": commit", err)
	}
	return total, nil
}
