package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/formd/formd/internal/store"
)

var _ store.Challenges = (*Store)(nil)

// SpendChallenge records a spent challenge (see store.Challenges). One
// upsert decides, across instances: a new signature is inserted; an
// existing one is "updated" only when the same (form, key) spent it, so a
// row not written is a replay. Two instances spending one challenge at
// once meet at the unique index and one of them waits for the other.
func (s *Store) SpendChallenge(ctx context.Context, u store.ChallengeUse, now time.Time) (bool, error) {
	var spent bool
	err := s.inTx(ctx, "spend challenge", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO challenge_uses(signature, form, key, expires) VALUES ($1, $2, $3, $4)
			ON CONFLICT (signature) DO UPDATE SET expires = challenge_uses.expires
			WHERE challenge_uses.form = excluded.form AND challenge_uses.key = excluded.key`,
			u.Signature, u.Form, u.Key, micro(u.Expires))
		if err != nil {
			return err
		}
		spent = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `DELETE FROM challenge_uses WHERE signature IN (SELECT signature FROM challenge_uses WHERE expires <= $1 LIMIT $2)`,
			micro(now.Add(-store.ChallengeGrace)), store.ChallengePrune)
		return err
	})
	return spent, err
}

// NoteSpamReason keeps why (form, key) is spam; old notes are pruned as
// it goes.
func (s *Store) NoteSpamReason(ctx context.Context, form, key, reason string, now time.Time) error {
	return s.inTx(ctx, "note spam reason", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO spam_reasons(form, key, reason, noted_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (form, key) DO UPDATE SET reason = excluded.reason, noted_at = excluded.noted_at`,
			form, key, reason, micro(now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM spam_reasons WHERE (form, key) IN (SELECT form, key FROM spam_reasons WHERE noted_at <= $1 LIMIT $2)`,
			micro(now.Add(-store.SpamReasonKeep)), store.ChallengePrune)
		return err
	})
}

// SpamReason reads the note for (form, key).
func (s *Store) SpamReason(ctx context.Context, form, key string) (string, error) {
	var r string
	err := s.pool.QueryRow(ctx, `SELECT reason FROM spam_reasons WHERE form = $1 AND key = $2`, form, key).Scan(&r)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", classify("read spam reason", err)
	}
	return r, nil
}
