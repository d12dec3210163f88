package pgstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Outbox = (*Store)(nil)

// FanOut takes unfanned events, adds their deliveries and marks them, in
// one transaction. FOR UPDATE SKIP LOCKED lets instances fan out at once,
// each taking other events.
func (s *Store) FanOut(ctx context.Context, limit int, now time.Time, plan func([]store.Event) []store.NewDelivery) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	if work, err := s.exists(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE NOT fanned)`); err != nil {
		return 0, classify("fan out", err)
	} else if !work {
		return 0, nil
	}
	n := 0
	err := s.inTx(ctx, "fan out", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+store.EventColumns+` FROM events e WHERE NOT e.fanned ORDER BY e.seq LIMIT $1 FOR UPDATE SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		evs, err := collect(rows, store.ScanEvent)
		if err != nil || len(evs) == 0 {
			return err
		}
		b := &pgx.Batch{}
		for _, d := range plan(evs) {
			b.Queue(`INSERT INTO deliveries(event_seq, endpoint, form, site, state, next_at, created_at, updated_at)
				VALUES ($1, $2, $3, $4, CASE WHEN EXISTS (SELECT 1 FROM endpoints_disabled WHERE endpoint = $2) THEN 'skipped' ELSE 'pending' END, $6, $5, $5)
				ON CONFLICT (event_seq, endpoint) DO NOTHING`, int64(d.EventSeq), d.Endpoint, d.Form, d.Site, micro(now), micro(dueAt(d.NextAt, now)))
		}
		seqs := make([]int64, len(evs))
		for i, e := range evs {
			seqs[i] = int64(e.Seq)
		}
		b.Queue(`UPDATE events SET fanned = true WHERE seq = ANY($1)`, seqs)
		b.Queue(clearNotices)
		n = len(evs)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// clearNotices sets the address of erasure notices (store.EventErased)
// back to NULL once nothing will send to it: the event is fanned out and
// none of its deliveries is pending (each delivered, skipped or failed,
// or none made, as for a form that no longer sends e-mail). It runs where
// deliveries end: fan-out, finish, an endpoint switched off.
const clearNotices = `UPDATE events SET notice_to = NULL WHERE notice_to IS NOT NULL AND fanned
	AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = events.seq AND d.state = 'pending')`

// dueAt is a delivery's first due time: t, or now when t is zero.
func dueAt(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// ClaimDeliveries leases due deliveries to owner. FOR UPDATE SKIP LOCKED
// lets instances claim at once without waiting on each other or claiming
// one delivery twice; an expired lease (an instance that died) is taken
// over.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, q store.ClaimQuery) ([]store.Delivery, error) {
	if q.Limit < 1 {
		return nil, nil
	}
	if work, err := s.exists(ctx, `SELECT EXISTS (SELECT 1 FROM deliveries WHERE state = 'pending' AND next_at <= $1)`, micro(now)); err != nil {
		return nil, classify("claim deliveries", err)
	} else if !work {
		return nil, nil
	}
	var out []store.Delivery
	err := s.inTx(ctx, "claim deliveries", func(tx pgx.Tx) error {
		perEndpoint := q.PerEndpoint
		if perEndpoint <= 0 {
			perEndpoint = q.Limit
		}
		exclude := q.Exclude
		if exclude == nil {
			exclude = []string{}
		}
		// The endpoints with pending deliveries, by a loose scan of the
		// index deliveries_pending (endpoint, next_at); each one's oldest
		// due, at most PerEndpoint; of those the oldest, at most Limit,
		// skipping what another instance is claiming. Among deliveries
		// due at the same time, event order decides. The cost follows
		// what is claimed and the endpoints, not the backlog.
		rows, err := tx.Query(ctx, `WITH RECURSIVE eps(endpoint) AS (
				(SELECT endpoint FROM deliveries WHERE state = 'pending' ORDER BY endpoint LIMIT 1)
				UNION ALL
				SELECT (SELECT d.endpoint FROM deliveries d WHERE d.state = 'pending' AND d.endpoint > eps.endpoint ORDER BY d.endpoint LIMIT 1)
				FROM eps WHERE eps.endpoint IS NOT NULL
			), cand AS (
				SELECT c.event_seq, c.endpoint, c.next_at FROM eps CROSS JOIN LATERAL (
					SELECT event_seq, endpoint, next_at FROM deliveries
					WHERE state = 'pending' AND endpoint = eps.endpoint AND next_at <= $1 AND lease_until < $1
					ORDER BY next_at, event_seq LIMIT $7) c
				WHERE eps.endpoint IS NOT NULL AND ($5 = '' OR eps.endpoint = $5) AND eps.endpoint <> $6 AND NOT (eps.endpoint = ANY($8))
			), due AS (
				SELECT d.event_seq, d.endpoint FROM deliveries d JOIN cand c ON c.event_seq = d.event_seq AND c.endpoint = d.endpoint
				WHERE d.state = 'pending' AND d.lease_until < $1
				ORDER BY c.next_at, c.event_seq, c.endpoint LIMIT $2 FOR UPDATE OF d SKIP LOCKED
			), claimed AS (
				UPDATE deliveries d SET lease_owner = $3, lease_until = $4 FROM due
				WHERE d.event_seq = due.event_seq AND d.endpoint = due.endpoint RETURNING d.*
			)
			SELECT `+store.ClaimColumns+` FROM claimed d JOIN events e ON e.seq = d.event_seq ORDER BY d.next_at, d.event_seq, d.endpoint`,
			micro(now), q.Limit, owner, micro(now.Add(lease)), q.Endpoint, q.Except, perEndpoint, exclude)
		if err != nil {
			return err
		}
		out, err = collect(rows, store.ScanClaim)
		return err
	})
	return out, err
}

// ReleaseLeases frees every lease.
func (s *Store) ReleaseLeases(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET lease_owner = '', lease_until = '-infinity' WHERE lease_owner <> ''`)
	if err != nil {
		return 0, classify("release leases", err)
	}
	return int(tag.RowsAffected()), nil
}

// FinishDeliveries logs attempts and sets the deliveries' new states,
// each only if its lease is still the owner's.
func (s *Store) FinishDeliveries(ctx context.Context, fs []store.Finish, now time.Time) error {
	if len(fs) == 0 {
		return nil
	}
	return s.inTx(ctx, "finish deliveries", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, f := range fs {
			if a := f.Attempt; !a.At.IsZero() {
				b.Queue(`INSERT INTO delivery_attempts(event_seq, endpoint, at, status, latency_us, outcome, excerpt) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
					int64(f.EventSeq), f.Endpoint, micro(a.At), a.Status, a.Latency.Microseconds(), string(a.Outcome), a.Excerpt)
			}
			counted := 0
			if f.Counted {
				counted = 1
			}
			// A delivery given back while its endpoint was switched off
			// (a 410 met by another batch) is skipped, not pending again.
			b.Queue(`UPDATE deliveries SET
				state = CASE WHEN $1 = 'pending' AND EXISTS (SELECT 1 FROM endpoints_disabled WHERE endpoint = $8) THEN 'skipped' ELSE $1 END, next_at = $2, attempts = attempts + $3, last_status = $4, last_error = $5,
				lease_owner = '', lease_until = '-infinity', updated_at = $6 WHERE event_seq = $7 AND endpoint = $8 AND lease_owner = $9`,
				f.State, micro(f.NextAt), counted, f.Attempt.Status, f.Error, micro(now), int64(f.EventSeq), f.Endpoint, f.Owner)
		}
		b.Queue(clearNotices)
		return tx.SendBatch(ctx, b).Close()
	})
}

// Redeliver makes the selected deliveries pending again.
func (s *Store) Redeliver(ctx context.Context, sel store.DeliverySelection, now time.Time) (int, error) {
	args := []any{micro(now)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"true"}
	if k := sel.Key; k != nil {
		where = append(where, "d.event_seq = "+arg(int64(k.EventSeq))+" AND d.endpoint = "+arg(k.Endpoint))
	}
	if sel.Form != "" {
		where = append(where, "d.form = "+arg(sel.Form))
	}
	if sel.Site != "" {
		where = append(where, "d.site = "+arg(sel.Site))
	}
	if !sel.Since.IsZero() {
		where = append(where, "e.at >= "+arg(sel.Since))
	}
	if !sel.Until.IsZero() {
		where = append(where, "e.at < "+arg(sel.Until))
	}
	if sel.FailedOnly {
		where = append(where, "d.state = 'failed'")
	} else {
		where = append(where, "d.state IN ('failed', 'delivered', 'skipped')")
	}
	var n int64
	err := s.inTx(ctx, "redeliver", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE deliveries d SET state = 'pending', attempts = 0, next_at = $1, lease_owner = '', lease_until = '-infinity', updated_at = $1
			FROM events e WHERE e.seq = d.event_seq AND `+strings.Join(where, " AND "), args...)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// DisableEndpoint switches an endpoint off and skips its pending
// deliveries.
func (s *Store) DisableEndpoint(ctx context.Context, endpoint, form, reason string, now time.Time) error {
	return s.inTx(ctx, "disable endpoint", func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO endpoints_disabled(endpoint, form, reason, at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (endpoint) DO UPDATE SET reason = excluded.reason, at = excluded.at`, endpoint, form, reason, micro(now))
		b.Queue(`UPDATE deliveries SET state = 'skipped', updated_at = $1 WHERE endpoint = $2 AND state = 'pending'`, micro(now), endpoint)
		b.Queue(clearNotices)
		return tx.SendBatch(ctx, b).Close()
	})
}

// EnableEndpoint switches an endpoint on again.
func (s *Store) EnableEndpoint(ctx context.Context, endpoint string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM endpoints_disabled WHERE endpoint = $1`, endpoint); err != nil {
		return classify("enable endpoint", err)
	}
	return nil
}

// DisabledEndpoints lists the switched-off endpoints.
func (s *Store) DisabledEndpoints(ctx context.Context) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT endpoint, reason FROM endpoints_disabled`)
	if err != nil {
		return nil, classify("read disabled endpoints", err)
	}
	out := map[string]string{}
	var e, r string
	if _, err := pgx.ForEachRow(rows, []any{&e, &r}, func() error { out[e] = r; return nil }); err != nil {
		return nil, classify("read disabled endpoints", err)
	}
	return out, nil
}

// EntryDocs reads entries for deliveries.
func (s *Store) EntryDocs(ctx context.Context, ids []string) (map[string]store.EntryDoc, error) {
	out := make(map[string]store.EntryDoc, len(ids))
	rows, err := s.pool.Query(ctx, `SELECT `+store.DocColumns+` FROM entries WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, classify("read entries", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := store.ScanDoc(rows)
		if err != nil {
			return nil, classify("read entries", err)
		}
		out[d.ID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read entries", err)
	}
	return out, nil
}

// Deliveries lists the deliveries of an entry's events with their
// attempts.
func (s *Store) Deliveries(ctx context.Context, entryID string) ([]store.Delivery, []store.Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.DeliveryColumns+` FROM deliveries d JOIN events e ON e.seq = d.event_seq
		WHERE e.entry_id = $1 ORDER BY d.event_seq, d.endpoint`, entryID)
	if err != nil {
		return nil, nil, classify("read deliveries", err)
	}
	ds, err := collect(rows, store.ScanDelivery)
	if err != nil {
		return nil, nil, classify("read deliveries", err)
	}
	rows, err = s.pool.Query(ctx, `SELECT `+store.AttemptColumns+`
		FROM delivery_attempts a JOIN events e ON e.seq = a.event_seq WHERE e.entry_id = $1 ORDER BY a.at`, entryID)
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
	var st store.DeliveryStats
	var oldest *time.Time
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM deliveries WHERE state = 'pending'),
		(SELECT min(e.at) FROM deliveries d JOIN events e ON e.seq = d.event_seq WHERE d.state = 'pending'),
		(SELECT count(*) FROM deliveries WHERE state = 'failed'),
		(SELECT count(*) FROM events WHERE NOT fanned)`).
		Scan(&st.Pending, &oldest, &st.Failed, &st.UnfannedEvents)
	if err != nil {
		return st, classify("count deliveries", err)
	}
	if oldest != nil {
		st.OldestPending = *oldest
	}
	return st, nil
}
