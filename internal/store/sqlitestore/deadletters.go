package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// DeadLetter gives the key the outcome dead-lettered and keeps the reason.
// An entry already in (its key decided, or its id another key's) keeps
// its outcome, which is returned Replayed (see store.Store).
func (s *Store) DeadLetter(ctx context.Context, sub journal.Entry, reason string, attempts int) (store.Outcome, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return store.Outcome{}, classify("dead-letter: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	now := s.now().UnixMicro()
	res, err := tx.ExecContext(ctx, `INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
		VALUES (?, ?, ?, ?, ?, 'dead-lettered', 'dead-lettered', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		sub.ID, sub.Seq, sub.Form, sub.Site, sub.Key, sub.ReceivedAt.UnixMicro(), now, sub.Fingerprint[:], strings.Join(sub.Claims, ","), []byte(sub.Data))
	if err != nil {
		return store.Outcome{}, classify("dead-letter: insert entry", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		o, err := earlierOutcome(ctx, tx, sub)
		if err != nil {
			return o, classify("dead-letter: read earlier outcome", err)
		}
		return o, nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO dead_letters(entry_id, form, key, seq, reason, attempts, at) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(entry_id) DO UPDATE SET reason = excluded.reason, attempts = excluded.attempts, at = excluded.at`,
		sub.ID, sub.Form, sub.Key, sub.Seq, reason, attempts, now); err != nil {
		return store.Outcome{}, classify("dead-letter: record", err)
	}
	if err := tx.Commit(); err != nil {
		return store.Outcome{}, classify("dead-letter: commit", err)
	}
	return store.Outcome{ID: sub.ID, Form: sub.Form, Key: sub.Key, Decision: store.StatusDeadLettered,
		Status: store.StatusDeadLettered, ReceivedAt: sub.ReceivedAt, Fingerprint: sub.Fingerprint}, nil
}

// earlierOutcome is the outcome that kept a dead letter out: its key's,
// or else that of the entry holding its id.
func earlierOutcome(ctx context.Context, q queryer, sub journal.Entry) (store.Outcome, error) {
	return store.EarlierOutcome(sub,
		func(form, key string) (store.Outcome, bool, error) { return outcome(ctx, q, form, key) },
		func(id string) (form, key string, err error) {
			err = q.QueryRowContext(ctx, `SELECT form, key FROM entries WHERE id = ?`, id).Scan(&form, &key)
			return form, key, err
		})
}

// DeadLetters lists dead letters, oldest first.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]store.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	// CROSS JOIN keeps the few dead letters the outer loop: left to
	// itself, SQLite scanned every entry for its status, on every
	// /metrics scrape.
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.DeadLetterColumns+` FROM dead_letters d
		CROSS JOIN entries e ON e.id = d.entry_id AND e.status = 'dead-lettered' ORDER BY d.at, d.entry_id LIMIT ?`, limit)
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
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("forget dead letter: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var id string
	err = tx.QueryRowContext(ctx, `DELETE FROM entries WHERE form = ? AND key = ? AND status = 'dead-lettered' RETURNING id`, form, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, classify("forget dead letter", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM dead_letters WHERE entry_id = ?`, id); err != nil {
		return false, classify("forget dead letter", err)
	}
	if err := tx.Commit(); err != nil {
		return false, classify("forget dead letter: commit", err)
	}
	return true, nil
}
