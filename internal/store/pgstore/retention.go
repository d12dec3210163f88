package pgstore

import (
	"context"
	"strconv"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// Erase removes the data and claims of old entries of a form, oldest
// first (by id among equals). Rows another instance is erasing are
// skipped, not waited for.
func (s *Store) Erase(ctx context.Context, form string, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	return s.erase(ctx, "erase old data", nil, `SELECT id FROM entries WHERE form = $1 AND received_at < $2 AND data IS NOT NULL
		ORDER BY received_at, id LIMIT $3 FOR UPDATE SKIP LOCKED`, form, before, limit)
}

// EraseEntries erases the entries with these ids; an entry whose request
// it grants, of a form in tell, gets its EventErased event.
func (s *Store) EraseEntries(ctx context.Context, ids []string, tell store.NoticeFields) (int, error) {
	return s.erase(ctx, "erase entries", tell, `SELECT id FROM entries WHERE id = ANY($1) AND data IS NOT NULL FOR UPDATE`, ids)
}

// erase erases the entries the query selects, in one statement, with the
// EventErased events of the requests it grants on the forms of tell.
// Every part of the statement sees the rows as they were before it: the
// notice reads the address from the data being erased, and only requests
// still pending, which the same statement marks done.
func (s *Store) erase(ctx context.Context, op string, tell store.NoticeFields, selectIDs string, args ...any) (int, error) {
	forms, fields := []string{}, []string{}
	for f, field := range tell {
		forms, fields = append(forms, f), append(fields, field)
	}
	k := len(args)
	arg := func(i int) string { return "$" + strconv.Itoa(k+i) }
	args = append(args, forms, fields, micro(s.now()), store.EventErased)
	var n int
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH target AS (`+selectIDs+`),
			tell AS (SELECT * FROM unnest(`+arg(1)+`::text[], `+arg(2)+`::text[]) AS t(form, field)),
			notices AS (INSERT INTO events(entry_id, n, type, form, site, status, at, notice_to)
				SELECT e.id, (SELECT coalesce(max(v.n), 0) + 1 FROM events v WHERE v.entry_id = e.id AND v.type = `+arg(4)+`::text),
					`+arg(4)+`::text, e.form, e.site, e.status, `+arg(3)+`::timestamptz, convert_from(e.data, 'UTF8')::jsonb ->> t.field
				FROM target x JOIN entries e ON e.id = x.id
				JOIN erasure_requests r ON r.entry_id = e.id AND r.done_at IS NULL
				JOIN tell t ON t.form = e.form
				WHERE jsonb_typeof(convert_from(e.data, 'UTF8')::jsonb -> t.field) = 'string'
					AND convert_from(e.data, 'UTF8')::jsonb ->> t.field <> ''),
			released AS (DELETE FROM claims WHERE entry_id IN (SELECT id FROM target)),
			erased AS (UPDATE entries SET data = NULL, claims = '{}' WHERE id IN (SELECT id FROM target) RETURNING 1),
			versions AS (DELETE FROM entry_versions WHERE entry_id IN (SELECT id FROM target)),
			requests AS (UPDATE erasure_requests SET done_at = now() WHERE done_at IS NULL AND entry_id IN (SELECT id FROM target))
			SELECT count(*) FROM erased`, args...).Scan(&n)
	})
	return n, err
}
