package pgstore

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Reviewer = (*Store)(nil)

// Review approves or declines a pending entry, once across instances
// (formd_review's guarded update), and on a decline promotes the
// waitlist into the freed places, in one transaction.
func (s *Store) Review(ctx context.Context, form, id string, approve bool) ([]string, error) {
	op := "decline"
	if approve {
		op = "approve"
	}
	var promoted []string
	var refused error
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		promoted, refused = nil, nil
		now := micro(s.now())
		var was string
		if err := tx.QueryRow(ctx, `SELECT formd_review($1, $2, $3, $4)`, form, id, approve, now).Scan(&was); err != nil {
			return err
		}
		switch was {
		case "":
			refused = fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
			return nil
		case store.StatusPending:
		default:
			refused = fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotPending)
			return nil
		}
		if approve {
			return nil
		}
		return tx.QueryRow(ctx, `SELECT coalesce(array_agg(p), '{}') FROM formd_promote($1, $2) p`, form, now).Scan(&promoted)
	})
	if err != nil {
		return nil, err
	}
	return promoted, refused
}
