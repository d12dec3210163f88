package pgstore

import (
	"context"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// DeadLetter gives the key the outcome dead-lettered and keeps the reason,
// in one statement. An entry already in (its key decided, or its id
// another key's) keeps its outcome, which is returned Replayed (see
// store.Store).
func (s *Store) DeadLetter(ctx context.Context, sub journal.Entry, reason string, attempts int) (store.Outcome, error) {
	var o store.Outcome
	err := s.inTx(ctx, "dead-letter", func(tx pgx.Tx) error {
		claims := sub.Claims
		if claims == nil {
			claims = []string{}
		}
		var inserted int
		err := tx.QueryRow(ctx, `WITH ins AS (
				INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
				VALUES ($1, $2, $3, $4, $5, 'dead-lettered', 'dead-lettered', $6, $7, $8, $9, $10)
				ON CONFLICT DO NOTHING RETURNING id
			), dl AS (
				INSERT INTO dead_letters(entry_id, form, key, seq, reason, attempts, at)
				SELECT id, $3, $5, $2, $11, $12, $7 FROM ins
				ON CONFLICT (entry_id) DO UPDATE SET reason = excluded.reason, attempts = excluded.attempts, at = excluded.at
			)
			SELECT count(*) FROM ins`,
			sub.ID, int64(sub.Seq), sub.Form, sub.Site, sub.Key, micro(sub.ReceivedAt), micro(s.now()),
			sub.Fingerprint[:], claims, []byte(sub.Data), reason, attempts).Scan(&inserted)
		if err != nil {
			return err
		}
		if inserted == 1 {
			o = store.Outcome{ID: sub.ID, Form: sub.Form, Key: sub.Key, Decision: store.StatusDeadLettered,
				Status: store.StatusDeadLettered, ReceivedAt: micro(sub.ReceivedAt), Fingerprint: sub.Fingerprint}
			return nil
		}
		o, err = earlierOutcome(ctx, tx, sub)
		return err
	})
	return o, err
}

// earlierOutcome is the outcome that kept a dead letter out: its key's,
// or else that of the entry holding its id.
func earlierOutcome(ctx context.Context, q queryer, sub journal.Entry) (store.Outcome, error) {
	return store.EarlierOutcome(sub,
		func(form, key string) (store.Outcome, bool, error) { return outcome(ctx, q, form, key) },
		func(id string) (form, key string, err error) {
			err = q.QueryRow(ctx, `SELECT form, key FROM entries WHERE id = $1`, id).Scan(&form, &key)
			return form, key, err
		})
}

// DeadLetters lists dead letters, oldest first.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]store.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT `+store.DeadLetterColumns+` FROM dead_letters d
		JOIN entries e ON e.id = d.entry_id AND e.status = 'dead-lettered' ORDER BY d.at, d.entry_id LIMIT $1`, limit)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	out, err := collect(rows, store.ScanDeadLetter)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	return out, nil
}

// ForgetDeadLetter deletes a dead-lettered outcome so the entry can be
// decided again from the journal.
func (s *Store) ForgetDeadLetter(ctx context.Context, form, key string) (bool, error) {
	var n int
	err := s.inTx(ctx, "forget dead letter", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH d AS (
				DELETE FROM entries WHERE form = $1 AND key = $2 AND status = 'dead-lettered' RETURNING id
			), x AS (
				DELETE FROM dead_letters WHERE entry_id IN (SELECT id FROM d)
			)
			SELECT count(*) FROM d`, form, key).Scan(&n)
	})
	return n > 0, err
}
