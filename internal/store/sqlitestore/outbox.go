package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.Outbox = (*Store)(nil)

// FanOut takes unfanned events, adds their deliveries and marks them, in
// one transaction (the one write connection serializes fan-outs).
func (s *Store) FanOut(ctx context.Context, limit int, now time.Time, plan func([]store.Event) []store.NewDelivery) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify("fan out: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	rows, err := tx.QueryContext(ctx, `SELECT `+store.EventColumns+` FROM events e WHERE e.fanned = 0 ORDER BY e.seq LIMIT ?`, limit)
	if err != nil {
		return 0, classify("fan out", err)
	}
	evs, err := collect(rows, store.ScanEvent)
	if err != nil {
		return 0, classify("fan out", err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	// A delivery to a disabled endpoint is skipped at once.
	add, err := tx.PrepareContext(ctx, `INSERT INTO deliveries(event_seq, endpoint, form, site, state, next_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, CASE WHEN EXISTS (SELECT 1 FROM endpoints_disabled WHERE endpoint = ?2) THEN 'skipped' ELSE 'pending' END, ?6, ?5, ?5)
		ON CONFLICT(event_seq, endpoint) DO NOTHING`)
	if err != nil {
		return 0, classify("fan out: prepare", err)
	}
	defer add.Close()
	for _, d := range plan(evs) {
		if _, err := add.ExecContext(ctx, d.EventSeq, d.Endpoint, d.Form, d.Site, now.UnixMicro(), dueAt(d.NextAt, now).UnixMicro()); err != nil {
			return 0, classify("fan out", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE events SET fanned = 1 WHERE fanned = 0 AND seq <= ?`, evs[len(evs)-1].Seq); err != nil {
		return 0, classify("fan out: mark", err)
	}
	if _, err := tx.ExecContext(ctx, clearNotices); err != nil {
		return 0, classify("fan out: clear addresses", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify("fan out: commit", err)
	}
	return len(evs), nil
}

// clearNotices sets the address of erasure notices (store.EventErased)
// back to NULL once nothing will send to it: the event is fanned out and
// none of its deliveries is pending (each delivered, skipped or failed,
// or none made, as for a form that no longer sends e-mail). It runs where
// deliveries end: fan-out, finish, an endpoint switched off.
const clearNotices = `UPDATE events SET notice_to = NULL WHERE notice_to IS NOT NULL AND fanned = 1
	AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = events.seq AND d.state = 'pending')`

// dueAt is a delivery's first due time: t, or now when t is zero.
func dueAt(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// ClaimDeliveries leases due deliveries to owner. The one write
// connection serializes claims, so no two owners get the same delivery.
//
// It reads the due deliveries endpoint by endpoint through the partial
// index deliveries_pending (endpoint, next_at): the endpoints with pending
// deliveries by a loose scan of the index, then each one's oldest due,
// at most PerEndpoint, skipping leased ones; then leases the oldest due
// of them all (in event order among equals), at most Limit. Its cost
// follows the deliveries claimed and the endpoints, not the backlog: a
// long backlog of one endpoint neither crowds out the others nor slows
// the claim.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, q store.ClaimQuery) ([]store.Delivery, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	perEndpoint := q.PerEndpoint
	if perEndpoint <= 0 {
		perEndpoint = q.Limit
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify("claim deliveries: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var endpoints []string
	if q.Endpoint != "" {
		endpoints = []string{q.Endpoint}
	} else {
		rows, err := tx.QueryContext(ctx, `WITH RECURSIVE eps(endpoint) AS (
				SELECT min(endpoint) FROM deliveries WHERE state = 'pending'
				UNION ALL
				SELECT (SELECT min(endpoint) FROM deliveries WHERE state = 'pending' AND endpoint > eps.endpoint) FROM eps WHERE eps.endpoint IS NOT NULL
			) SELECT endpoint FROM eps WHERE endpoint IS NOT NULL`)
		if err != nil {
			return nil, classify("claim deliveries: endpoints", err)
		}
		for rows.Next() {
			var ep string
			if err := rows.Scan(&ep); err != nil {
				rows.Close()
				return nil, classify("claim deliveries: endpoints", err)
			}
			if ep != q.Except && !slices.Contains(q.Exclude, ep) {
				endpoints = append(endpoints, ep)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, classify("claim deliveries: endpoints", err)
		}
	}
	due, err := tx.PrepareContext(ctx, `SELECT `+store.ClaimColumns+` FROM deliveries d JOIN events e ON e.seq = d.event_seq
		WHERE d.state = 'pending' AND d.endpoint = ? AND d.next_at <= ? AND d.lease_until < ? ORDER BY d.next_at, d.event_seq LIMIT ?`)
	if err != nil {
		return nil, classify("claim deliveries: prepare", err)
	}
	defer due.Close()
	var out []store.Delivery
	for _, ep := range endpoints {
		rows, err := due.QueryContext(ctx, ep, now.UnixMicro(), now.UnixMicro(), perEndpoint)
		if err != nil {
			return nil, classify("claim deliveries", err)
		}
		ds, err := collect(rows, store.ScanClaim)
		if err != nil {
			return nil, classify("claim deliveries", err)
		}
		out = append(out, ds...)
	}
	if len(out) == 0 {
		return nil, nil
	}
	// The oldest due first, and among those due together (a fan-out makes
	// them so) in event order.
	slices.SortFunc(out, func(a, b store.Delivery) int {
		return cmp.Or(a.NextAt.Compare(b.NextAt), cmp.Compare(a.EventSeq, b.EventSeq), strings.Compare(a.Endpoint, b.Endpoint))
	})
	out = out[:min(len(out), q.Limit)]
	take, err := tx.PrepareContext(ctx, `UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE event_seq = ? AND endpoint = ?`)
	if err != nil {
		return nil, classify("claim deliveries: prepare", err)
	}
	defer take.Close()
	for _, d := range out {
		if _, err := take.ExecContext(ctx, owner, now.Add(lease).UnixMicro(), d.EventSeq, d.Endpoint); err != nil {
			return nil, classify("claim deliveries", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, classify("claim deliveries: commit", err)
	}
	return out, nil
}

// ReleaseLeases frees every lease.
func (s *Store) ReleaseLeases(ctx context.Context) (int, error) {
	res, err := s.wdb.ExecContext(ctx, `UPDATE deliveries SET lease_owner = '', lease_until = 0 WHERE lease_owner != ''`)
	if err != nil {
		return 0, classify("release leases", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// FinishDeliveries logs attempts and sets the deliveries' new states,
// each only if its lease is still the owner's.
func (s *Store) FinishDeliveries(ctx context.Context, fs []store.Finish, now time.Time) error {
	if len(fs) == 0 {
		return nil
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("finish deliveries: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	logAttempt, err := tx.PrepareContext(ctx, `INSERT INTO delivery_attempts(event_seq, endpoint, at, status, latency_us, outcome, excerpt) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return classify("finish deliveries: prepare", err)
	}
	defer logAttempt.Close()
	// A delivery given back while its endpoint was switched off (a 410
	// met by another batch) is skipped, not pending again.
	update, err := tx.PrepareContext(ctx, `UPDATE deliveries SET
		state = CASE WHEN ?1 = 'pending' AND EXISTS (SELECT 1 FROM endpoints_disabled WHERE endpoint = ?8) THEN 'skipped' ELSE ?1 END,
		next_at = ?2, attempts = attempts + ?3, last_status = ?4, last_error = ?5,
		lease_owner = '', lease_until = 0, updated_at = ?6 WHERE event_seq = ?7 AND endpoint = ?8 AND lease_owner = ?9`)
	if err != nil {
		return classify("finish deliveries: prepare", err)
	}
	defer update.Close()
	for _, f := range fs {
		if a := f.Attempt; !a.At.IsZero() {
			if _, err := logAttempt.ExecContext(ctx, f.EventSeq, f.Endpoint, a.At.UnixMicro(), a.Status, a.Latency.Microseconds(), string(a.Outcome), a.Excerpt); err != nil {
				return classify("finish deliveries: log", err)
			}
		}
		counted := 0
		if f.Counted {
			counted = 1
		}
		if _, err := update.ExecContext(ctx, f.State, f.NextAt.UnixMicro(), counted, f.Attempt.Status, f.Error, now.UnixMicro(), f.EventSeq, f.Endpoint, f.Owner); err != nil {
			return classify("finish deliveries", err)
		}
	}
	if _, err := tx.ExecContext(ctx, clearNotices); err != nil {
		return classify("finish deliveries: clear addresses", err)
	}
	if err := tx.Commit(); err != nil {
		return classify("finish deliveries: commit", err)
	}
	return nil
}

// Redeliver makes the selected deliveries pending again.
func (s *Store) Redeliver(ctx context.Context, sel store.DeliverySelection, now time.Time) (int, error) {
	where := []string{"1 = 1"}
	var args []any
	if k := sel.Key; k != nil {
		where, args = append(where, "d.event_seq = ? AND d.endpoint = ?"), append(args, k.EventSeq, k.Endpoint)
	}
	if sel.Form != "" {
		where, args = append(where, "d.form = ?"), append(args, sel.Form)
	}
	if sel.Site != "" {
		where, args = append(where, "d.site = ?"), append(args, sel.Site)
	}
	if !sel.Since.IsZero() {
		where, args = append(where, "e.at >= ?"), append(args, sel.Since.UnixMicro())
	}
	if !sel.Until.IsZero() {
		where, args = append(where, "e.at < ?"), append(args, sel.Until.UnixMicro())
	}
	if sel.FailedOnly {
		where = append(where, "d.state = 'failed'")
	} else {
		where = append(where, "d.state IN ('failed', 'delivered', 'skipped')")
	}
	args = append([]any{now.UnixMicro()}, args...)
	res, err := s.wdb.ExecContext(ctx, `UPDATE deliveries SET state = 'pending', attempts = 0, next_at = ?1, lease_owner = '', lease_until = 0, updated_at = ?1
		WHERE (event_seq, endpoint) IN (SELECT d.event_seq, d.endpoint FROM deliveries d JOIN events e ON e.seq = d.event_seq
			WHERE `+strings.Join(where, " AND ")+`)`, args...)
	if err != nil {
		return 0, classify("redeliver", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DisableEndpoint switches an endpoint off and skips its pending
// deliveries.
func (s *Store) DisableEndpoint(ctx context.Context, endpoint, form, reason string, now time.Time) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("disable endpoint: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO endpoints_disabled(endpoint, form, reason, at) VALUES (?, ?, ?, ?)
		ON CONFLICT(endpoint) DO UPDATE SET reason = excluded.reason, at = excluded.at`, endpoint, form, reason, now.UnixMicro()); err != nil {
		return classify("disable endpoint", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET state = 'skipped', updated_at = ? WHERE endpoint = ? AND state = 'pending'`, now.UnixMicro(), endpoint); err != nil {
		return classify("disable endpoint", err)
	}
	if _, err := tx.ExecContext(ctx, clearNotices); err != nil {
		return classify("disable endpoint: clear addresses", err)
	}
	if err := tx.Commit(); err != nil {
		return classify("disable endpoint: commit", err)
	}
	return nil
}

// EnableEndpoint switches an endpoint on again.
func (s *Store) EnableEndpoint(ctx context.Context, endpoint string) error {
	if _, err := s.wdb.ExecContext(ctx, `DELETE FROM endpoints_disabled WHERE endpoint = ?`, endpoint); err != nil {
		return classify("enable endpoint", err)
	}
	return nil
}

// DisabledEndpoints lists the switched-off endpoints.
func (s *Store) DisabledEndpoints(ctx context.Context) (map[string]string, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT endpoint, reason FROM endpoints_disabled`)
	if err != nil {
		return nil, classify("read disabled endpoints", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var e, r string
		if err := rows.Scan(&e, &r); err != nil {
			return nil, classify("read disabled endpoints", err)
		}
		out[e] = r
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read disabled endpoints", err)
	}
	return out, nil
}

// EntryDocs reads entries for deliveries.
func (s *Store) EntryDocs(ctx context.Context, ids []string) (map[string]store.EntryDoc, error) {
	out := make(map[string]store.EntryDoc, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.DocColumns+` FROM entries
			WHERE id IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, classify("read entries", err)
		}
		docs, err := collect(rows, store.ScanDoc)
		if err != nil {
			return nil, classify("read entries", err)
		}
		for _, d := range docs {
			out[d.ID] = d
		}
	}
	return out, nil
}

// Deliveries lists the deliveries of an entry's events with their
// attempts.
func (s *Store) Deliveries(ctx context.Context, entryID string) ([]store.Delivery, []store.Attempt, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.DeliveryColumns+` FROM deliveries d JOIN events e ON e.seq = d.event_seq
		WHERE e.entry_id = ? ORDER BY d.event_seq, d.endpoint`, entryID)
	if err != nil {
		return nil, nil, classify("read deliveries", err)
	}
	ds, err := collect(rows, store.ScanDelivery)
	if err != nil {
		return nil, nil, classify("read deliveries", err)
	}
	rows, err = s.rdb.QueryContext(ctx, `SELECT `+store.AttemptColumns+`
		FROM delivery_attempts a JOIN events e ON e.seq = a.event_seq WHERE e.entry_id = ? ORDER BY a.at`, entryID)
	if err != nil {
		return nil, nil, classify("read delivery attempts", err)
	}
	as, err := collect(rows, store.ScanAttempt)
	if err != nil {
		return nil, nil, classify("read delivery attempts", err)
	}
	return ds, as, nil
}

// DeliveryStats counts the outbox.
func (s *Store) DeliveryStats(ctx context.Context) (store.DeliveryStats, error) {
	var (
		st     store.DeliveryStats
		oldest sql.NullInt64
	)
	err := s.rdb.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM deliveries WHERE state = 'pending'),
		(SELECT min(e.at) FROM deliveries d JOIN events e ON e.seq = d.event_seq WHERE d.state = 'pending'),
		(SELECT count(*) FROM deliveries WHERE state = 'failed'),
		(SELECT count(*) FROM events WHERE fanned = 0)`).
		Scan(&st.Pending, &oldest, &st.Failed, &st.UnfannedEvents)
	if err != nil {
		return st, classify("count deliveries", err)
	}
	if oldest.Valid {
		st.OldestPending = time.UnixMicro(oldest.Int64)
	}
	return st, nil
}
