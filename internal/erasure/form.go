package erasure

import (
	"context"
	"fmt"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// FormStore is the part of the store EraseForm uses.
type FormStore interface {
	// Erase is retention's step (Eraser).
	Erase(ctx context.Context, form string, before time.Time, limit int) (int, error)
	// Entries pages through the form's entries, for their journal keys.
	Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error)
	store.FormPurge
}

// EraseForm erases everything a form holds, for deleting it: the
// journal's copies first (pr deletes them in bulk, fg one by one; both
// nil for a journal that cannot delete, which keeps them until its own
// limits remove them: JournalKept), then the entries' data and claims by
// retention's path, then every row of the form (store.FormPurge: files'
// bytes queued for the uploads pass). Every step is bounded and
// idempotent, so a run cut off is finished by the next. The form must be
// closed first, and its journal hold no undecided entry: an entry still
// being processed fails it with journal.ErrPending before the store is
// touched. now bounds what the journal's and retention's steps take:
// everything received before it.
func EraseForm(ctx context.Context, st FormStore, pr journal.Pruner, fg journal.Forgetter, form string, now time.Time) (journalKept bool, err error) {
	if pr != nil {
		if _, err := drain(ctx, func(ctx context.Context) (int, error) { return pr.Prune(ctx, form, now, chunk) }); err != nil {
			return false, fmt.Errorf("delete the journal's copies of %s: %w", form, err)
		}
	}
	if fg != nil {
		// What a bulk prune could not take (or, without one, every copy),
		// by the keys the store has.
		var before store.Cursor
		for {
			rows, err := st.Entries(ctx, store.EntryQuery{Form: form, Before: before, Limit: 500})
			if err != nil {
				return false, fmt.Errorf("list the entries of %s: %w", form, err)
			}
			for _, r := range rows {
				if err := fg.Forget(ctx, form, r.Key); err != nil {
					return false, fmt.Errorf("delete the journal's copy of %s/%s: %w", form, r.ID, err)
				}
			}
			if len(rows) < 500 {
				break
			}
			last := rows[len(rows)-1]
			before = store.Cursor{Seq: last.Seq, ID: last.ID}
		}
	}
	if _, err := drain(ctx, func(ctx context.Context) (int, error) { return st.Erase(ctx, form, now, chunk) }); err != nil {
		return false, fmt.Errorf("erase the entries of %s: %w", form, err)
	}
	if _, err := drain(ctx, func(ctx context.Context) (int, error) { return st.PurgeForm(ctx, form, chunk) }); err != nil {
		return false, fmt.Errorf("delete the rows of %s: %w", form, err)
	}
	return pr == nil && fg == nil, nil
}
