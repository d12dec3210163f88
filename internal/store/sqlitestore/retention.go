package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
)

// Erase removes the data and claims of old entries of a form, oldest
// first (by id among equals), then truncates the WAL so no copy of a page
// stays there.
//
// It is retention's step, repeated until a chunk comes back short: after
// each chunk the WAL is checkpointed without waiting for readers, and
// after the last it is truncated, tried again while readers keep it busy
// (sqlitedb.Truncate). A WAL still busy after that does not fail the pass:
// the data is gone from the tables, and the next pass or checkpoint
// truncates it.
func (s *Store) Erase(ctx context.Context, form string, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	n, err := s.erase(ctx, "erase old data", `SELECT id FROM entries WHERE form = ? AND received_at < ? AND data IS NOT NULL ORDER BY received_at, id LIMIT ?`,
		form, before.UnixMicro(), limit)
	if err != nil || (n == 0 && !s.erasedSinceTruncate.Load()) {
		return n, err
	}
	if n == limit {
		s.erasedSinceTruncate.Store(true)
		if err := sqlitedb.Checkpoint(ctx, s.wdb, s.schema()); err != nil {
			return n, classify("erase old data: checkpoint the WAL", err)
		}
		return n, nil
	}
	s.erasedSinceTruncate.Store(false)
	if err := sqlitedb.Truncate(ctx, s.wdb, s.schema()); err != nil && !errors.Is(err, sqlitedb.ErrCheckpointBusy) {
		return n, classify("erase old data: truncate the WAL", err)
	}
	return n, nil
}

// schema is the store file's name on its write connection.
func (s *Store) schema() string {
	if s.shared {
		return sqlitedb.SharedSchema
	}
	return "main"
}

// EraseEntries erases the entries with these ids.
func (s *Store) EraseEntries(ctx context.Context, ids []string) (int, error) {
	n := 0
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		m, err := s.erase(ctx, "erase entries", `SELECT id FROM entries WHERE data IS NOT NULL AND id IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
		n += m
		if err != nil {
			return n, err
		}
	}
	if n > 0 {
		if err := sqlitedb.Truncate(ctx, s.wdb, s.schema()); err != nil {
			// The data is gone from the tables; the WAL is truncated at
			// the next checkpoint.
			return n, classify("erase entries: truncate the WAL", err)
		}
	}
	return n, nil
}

// erase erases the entries the query selects, in one transaction; the
// caller sees to the WAL.
func (s *Store) erase(ctx context.Context, op, selectIDs string, args ...any) (int, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS erasing (id TEXT PRIMARY KEY)`); err != nil {
		return 0, classify(op, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM erasing`); err != nil {
		return 0, classify(op, err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO erasing(id) `+selectIDs, args...)
	if err != nil {
		return 0, classify(op, err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return 0, nil
	}
	for _, q := range []string{
		`DELETE FROM claims WHERE (form, claim, entry_id) IN (
			SELECT e.form, ` + claimKey("j.value") + `, e.id FROM erasing x JOIN entries e ON e.id = x.id,
				json_each('["' || replace(e.claims, ',', '","') || '"]') j WHERE e.claims != '')`,
		`UPDATE entries SET data = NULL, claims = '' WHERE id IN (SELECT id FROM erasing)`,
		// The versions its changes replaced go with it (changes.go), and a
		// participant's request is done (erasure.go).
		`DELETE FROM entry_versions WHERE entry_id IN (SELECT id FROM erasing)`,
		`UPDATE erasure_requests SET done_at = ` + fmt.Sprint(s.now().UnixMicro()) + ` WHERE done_at IS NULL AND entry_id IN (SELECT id FROM erasing)`,
		`DELETE FROM erasing`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return 0, classify(op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, classify(op+": commit", err)
	}
	return int(n), nil
}
