package pgstore

import (
	"context"

	"github.com/formd/formd/internal/store"
)

var _ store.OutcomesReader = (*Store)(nil)

// Outcomes reads the outcomes of keys in one query: an instance's poll
// for all the requests it has waiting. Keys without an entry are left out.
func (s *Store) Outcomes(ctx context.Context, keys []store.Key) ([]store.Outcome, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	forms, ks := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		forms[i], ks[i] = k.Form, k.Key
	}
	rows, err := s.pool.Query(ctx, `SELECT e.form, e.key, e.id, e.decision, e.status, e.received_at, e.fingerprint, e.detail,
			o.id, o.key, o.decision, o.received_at, CASE WHEN e.decision = 'rejected' THEN e.place END, e.linked
		FROM unnest($1::text[], $2::text[]) AS w(form, key)
		JOIN entries e ON e.form = w.form AND e.key = w.key
		LEFT JOIN entries o ON o.id = e.same_as`, forms, ks)
	if err != nil {
		return nil, classify("read outcomes", err)
	}
	defer rows.Close()
	var out []store.Outcome
	for rows.Next() {
		var o store.Outcome
		var c outcomeCols
		if err := rows.Scan(&o.Form, &o.Key, &o.ID, &o.Decision, &o.Status, &o.ReceivedAt, &c.fp, &c.detail,
			&c.same.id, &c.same.key, &c.same.decision, &c.same.receivedAt, &c.full, &o.Linked); err != nil {
			return nil, classify("read outcomes", err)
		}
		c.fill(&o)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read outcomes", err)
	}
	return out, nil
}
