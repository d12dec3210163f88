package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.Challenges = (*Store)(nil)

// SpendChallenge records a spent challenge (see store.Challenges) in a
// transaction of its own.
func (s *Store) SpendChallenge(ctx context.Context, u store.ChallengeUse, now time.Time) (bool, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("spend challenge: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	spent, err := spend(ctx, tx.StmtContext(ctx, s.hot.spend), u, now)
	if err != nil {
		return false, classify("spend challenge", err)
	}
	if _, err := tx.StmtContext(ctx, s.hot.prune).ExecContext(ctx, now.Add(-store.ChallengeGrace).UnixMicro(), store.ChallengePrune); err != nil {
		return false, classify("spend challenge: prune", err)
	}
	if err := tx.Commit(); err != nil {
		return false, classify("spend challenge: commit", err)
	}
	return spent, nil
}

// spendSQL spends a solution: a new signature is inserted; an existing
// one is "updated" only when the same (form, key) spent it, so a row not
// written is a replay.
const spendSQL = `INSERT INTO challenge_uses(signature, form, key, expires) VALUES (?1, ?2, ?3, ?4)
	ON CONFLICT(signature) DO UPDATE SET expires = challenge_uses.expires
	WHERE challenge_uses.form = excluded.form AND challenge_uses.key = excluded.key`

// pruneSQL deletes a bounded few spent solutions whose challenges expired
// before ?1.
const pruneSQL = `DELETE FROM challenge_uses WHERE signature IN (SELECT signature FROM challenge_uses WHERE expires <= ?1 LIMIT ?2)`

// spend spends u with the spendSQL statement st: in the decision's
// transaction for entries that carry their solution
// (journal.Entry.Challenge). The row is kept at least until now, so that
// a decision made late (the store was down) still outlives its grace.
func spend(ctx context.Context, st *sql.Stmt, u store.ChallengeUse, now time.Time) (bool, error) {
	exp := u.Expires
	if exp.Before(now) {
		exp = now
	}
	res, err := st.ExecContext(ctx, u.Signature, u.Form, u.Key, exp.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("spend challenge: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("spend challenge: %w", err)
	}
	return n == 1, nil
}

// NoteSpamReason keeps why (form, key) is spam; old notes are pruned as
// it goes.
func (s *Store) NoteSpamReason(ctx context.Context, form, key, reason string, now time.Time) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("note spam reason: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO spam_reasons(form, key, reason, noted_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT(form, key) DO UPDATE SET reason = excluded.reason, noted_at = excluded.noted_at`,
		form, key, reason, now.UnixMicro()); err != nil {
		return classify("note spam reason", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM spam_reasons WHERE (form, key) IN (SELECT form, key FROM spam_reasons WHERE noted_at <= ? LIMIT ?)`,
		now.Add(-store.SpamReasonKeep).UnixMicro(), store.ChallengePrune); err != nil {
		return classify("note spam reason: prune", err)
	}
	if err := tx.Commit(); err != nil {
		return classify("note spam reason: commit", err)
	}
	return nil
}

// SpamReason reads the note for (form, key).
func (s *Store) SpamReason(ctx context.Context, form, key string) (string, error) {
	var r string
	err := s.rdb.QueryRowContext(ctx, `SELECT reason FROM spam_reasons WHERE form = ? AND key = ?`, form, key).Scan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", classify("read spam reason", err)
	}
	return r, nil
}
