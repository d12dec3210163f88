package sqlitestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
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
	n, err := s.erase(ctx, "erase old data", nil, `SELECT id FROM entries WHERE form = ? AND received_at < ? AND data IS NOT NULL ORDER BY received_at, id LIMIT ?`,
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

// EraseEntries erases the entries with these ids; an entry whose request
// it grants, of a form in tell, gets its EventErased event.
func (s *Store) EraseEntries(ctx context.Context, ids []string, tell store.NoticeFields) (int, error) {
	n := 0
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		m, err := s.erase(ctx, "erase entries", tell, `SELECT id FROM entries WHERE data IS NOT NULL AND id IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
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

// erase erases the entries the query selects, in one transaction, with
// the EventErased events of the requests it grants on the forms of tell;
// the caller sees to the WAL.
func (s *Store) erase(ctx context.Context, op string, tell store.NoticeFields, selectIDs string, args ...any) (int, error) {
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
	now := s.now().UnixMicro()
	if len(tell) > 0 {
		// Before the data goes: the address is read from it. Only a
		// request still pending is granted here (it is marked done
		// below), so an entry is told once.
		fields, err := json.Marshal(tell)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events(entry_id, n, type, form, site, status, at, notice_to)
			SELECT e.id, (SELECT coalesce(max(v.n), 0) + 1 FROM events v WHERE v.entry_id = e.id AND v.type = ?1), ?1, e.form, e.site, e.status, ?2,
				json_extract(CAST(e.data AS TEXT), '$."' || t.value || '"')
			FROM erasing x JOIN entries e ON e.id = x.id
			JOIN erasure_requests r ON r.entry_id = e.id AND r.done_at IS NULL
			JOIN json_each(?3) t ON t.key = e.form
			WHERE json_type(CAST(e.data AS TEXT), '$."' || t.value || '"') = 'text'
				AND json_extract(CAST(e.data AS TEXT), '$."' || t.value || '"') != ''`, store.EventErased, now, string(fields)); err != nil {
			return 0, classify(op+": the erasure's notice", err)
		}
	}
	for _, q := range []string{
		`DELETE FROM claims WHERE (form, claim, entry_id) IN (
			SELECT e.form, ` + claimKey("j.value") + `, e.id FROM erasing x JOIN entries e ON e.id = x.id,
				json_each('["' || replace(e.claims, ',', '","') || '"]') j WHERE e.claims != '')`,
		`UPDATE entries SET data = NULL, claims = '' WHERE id IN (SELECT id FROM erasing)`,
		// The versions its changes replaced go with it (changes.go), and a
		// participant's request is done (erasure.go).
		`DELETE FROM entry_versions WHERE entry_id IN (SELECT id FROM erasing)`,
		`UPDATE erasure_requests SET done_at = ` + fmt.Sprint(now) + ` WHERE done_at IS NULL AND entry_id IN (SELECT id FROM erasing)`,
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
