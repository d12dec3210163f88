package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/formd/formd/internal/store"
)

// Review before it counts (migration 0075): capacity.review marks a form
// whose entries wait for an editor once they hold their places (the
// decision reads it with the entry's option, places.go).

var _ store.Reviewer = (*Store)(nil)

// Review approves or declines a pending entry, once: the guarded update
// from pending decides, so of two editors (or instances) at once exactly
// one changes it and the other gets ErrNotPending. Declining frees the
// entry's claims and places and promotes the waitlist, in the same
// transaction.
func (s *Store) Review(ctx context.Context, form, id string, approve bool) ([]string, error) {
	op, to, event := "decline", store.StatusDeclined, store.EventDeclined
	if approve {
		op, to, event = "approve", store.StatusStored, store.EventApproved
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	res, err := tx.ExecContext(ctx, `UPDATE entries SET status = ? WHERE form = ? AND id = ? AND status = 'pending'`, to, form, id)
	if err != nil {
		return nil, classify(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var was string
		err := tx.QueryRowContext(ctx, `SELECT status FROM entries WHERE form = ? AND id = ?`, form, id).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
		}
		if err != nil {
			return nil, classify(op, err)
		}
		return nil, fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotPending)
	}
	now := s.now()
	if err := recordEvent(ctx, tx, id, event, to, now); err != nil {
		return nil, classify(op+": event", err)
	}
	var promoted []string
	if !approve {
		if _, err := tx.ExecContext(ctx, releaseClaims, id); err != nil {
			return nil, classify(op+": release claims", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE capacity SET taken = taken - 1 WHERE form = ? AND taken > 0`, form); err != nil {
			return nil, classify(op+": free place", err)
		}
		if err := freeOptionPlace(ctx, tx, form, id); err != nil {
			return nil, classify(op+": free the option's place", err)
		}
		if promoted, err = promote(ctx, tx, form, now); err != nil {
			return nil, classify(op+": promote", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, classify(op+": commit", err)
	}
	return promoted, nil
}
