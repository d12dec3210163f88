package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// Apply decides the submissions in one transaction and one round trip:
// one formd_decide call each, sent together as one batch (inPipeline).
func (s *Store) Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error) {
	out := make([]store.Outcome, len(subs))
	err := s.inPipeline(ctx, "apply", func(send func(*pgx.Batch) pgx.BatchResults) error {
		now := micro(s.now())
		b := &pgx.Batch{}
		for i := range subs {
			sub := &subs[i]
			claims := sub.Claims
			if claims == nil {
				claims = []string{}
			}
			var (
				ids, fields []string
				sig         *string
				sigExp      *time.Time
				refuse      bool
			)
			if len(sub.Uploads) > 0 {
				ids, fields = make([]string, len(sub.Uploads)), make([]string, len(sub.Uploads))
				for k, u := range sub.Uploads {
					ids[k], fields[k] = u.ID, u.Field
				}
			}
			posted, err := postedOf(sub.Uploads)
			if err != nil {
				return fmt.Errorf("decide %s/%s: %w", sub.Form, sub.Key, err)
			}
			if c := sub.Challenge; c != nil {
				exp := micro(c.Expires)
				sig, sigExp, refuse = &c.Signature, &exp, c.Refuse
			}
			b.Queue(`SELECT o_id, o_decision, o_status, o_received_at, o_fingerprint, o_replayed,
				o_same_id, o_same_key, o_same_decision, o_same_received_at, o_detail
				FROM formd_decide_entry($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
				sub.ID, int64(sub.Seq), sub.Form, sub.Site, sub.Key, sub.Spam, micro(sub.ReceivedAt), now,
				sub.Fingerprint[:], claims, []byte(sub.Data), ids, fields, sig, sigExp, refuse, sub.SpamReason, posted)
		}
		br := send(b)
		for i := range subs {
			o := store.Outcome{Form: subs[i].Form, Key: subs[i].Key}
			var c outcomeCols
			if err := br.QueryRow().Scan(&o.ID, &o.Decision, &o.Status, &o.ReceivedAt, &c.fp, &o.Replayed,
				&c.same.id, &c.same.key, &c.same.decision, &c.same.receivedAt, &c.detail); err != nil {
				br.Close()
				return fmt.Errorf("decide %s/%s: %w", subs[i].Form, subs[i].Key, err)
			}
			c.fill(&o)
			o.Linked = !o.Replayed // a replay's is read below (linkedOf)
			out[i] = o
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	if err := s.fullOptions(ctx, out); err != nil {
		return nil, err
	}
	if err := s.linkedOf(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// linkedOf reads whether the replayed outcomes' entries were answered with
// the participant's link (store.Outcome.Linked); a new decision's was.
func (s *Store) linkedOf(ctx context.Context, out []store.Outcome) error {
	var ids []string
	for _, o := range out {
		if o.Replayed {
			ids = append(ids, o.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM entries WHERE id = ANY($1) AND linked`, ids)
	if err != nil {
		return classify("read linked", err)
	}
	linked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return classify("read linked", err)
	}
	for i := range out {
		if out[i].Replayed && slices.Contains(linked, out[i].ID) {
			out[i].Linked = true
		}
	}
	return nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// outcomeCols scans the columns of an outcome that fill turns into its
// fields: the fingerprint, the entry a resend is answered as, the detail
// and the full option (left nil where a query does not read it).
type outcomeCols struct {
	fp           []byte
	same         sameAs
	detail, full *string
}

func (c *outcomeCols) fill(o *store.Outcome) {
	copy(o.Fingerprint[:], c.fp)
	o.SameAs = c.same.original()
	if c.detail != nil {
		o.Detail = *c.detail
	}
	if c.full != nil {
		o.FullOption = *c.full
	}
}

// sameAs scans the entry a resend is answered as, when there is one.
type sameAs struct {
	id, key, decision *string
	receivedAt        *time.Time
}

func (s sameAs) original() *store.Original {
	if s.id == nil {
		return nil
	}
	o := &store.Original{ID: *s.id}
	if s.key != nil {
		o.Key = *s.key
	}
	if s.decision != nil {
		o.Decision = *s.decision
	}
	if s.receivedAt != nil {
		o.ReceivedAt = *s.receivedAt
	}
	return o
}

func outcome(ctx context.Context, q queryer, form, key string) (store.Outcome, bool, error) {
	o := store.Outcome{Form: form, Key: key}
	var c outcomeCols
	err := q.QueryRow(ctx, `SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, e.detail, o.id, o.key, o.decision, o.received_at,
		CASE WHEN e.decision = 'rejected' THEN e.place END, e.linked
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = $1 AND e.key = $2`, form, key).
		Scan(&o.ID, &o.Decision, &o.Status, &o.ReceivedAt, &c.fp, &c.detail, &c.same.id, &c.same.key, &c.same.decision, &c.same.receivedAt, &c.full, &o.Linked)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	c.fill(&o)
	return o, true, nil
}

// Outcome reads the outcome of (form, key).
func (s *Store) Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error) {
	o, ok, err := outcome(ctx, s.pool, form, key)
	if err != nil {
		return o, false, classify("read outcome", err)
	}
	return o, ok, nil
}

// NotSpam decides an entry classed as spam again as a real submission,
// with the same formd_place as a new one.
func (s *Store) NotSpam(ctx context.Context, form, id string) (store.Outcome, error) {
	o := store.Outcome{ID: id, Form: form}
	var refused error
	err := s.inTx(ctx, "not spam", func(tx pgx.Tx) error {
		refused = nil
		var (
			status, site string
			claims       []string
			fp           []byte
			hasData      bool
		)
		err := tx.QueryRow(ctx, `SELECT key, site, status, claims, received_at, fingerprint, data IS NOT NULL FROM entries
			WHERE form = $1 AND id = $2 FOR UPDATE`, form, id).Scan(&o.Key, &site, &status, &claims, &o.ReceivedAt, &fp, &hasData)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = fmt.Errorf("not spam %s/%s: %w", form, id, store.ErrNotFound)
			return nil
		}
		if err != nil {
			return err
		}
		if status != store.StatusSpam || !hasData {
			refused = fmt.Errorf("not spam %s/%s (status %s): %w", form, id, status, store.ErrNotSpam)
			return nil
		}
		copy(o.Fingerprint[:], fp)
		if _, err := tx.Exec(ctx, `UPDATE entries SET status = 'stored', decision = 'stored' WHERE id = $1`, id); err != nil {
			return err
		}
		var same sameAs
		if err := tx.QueryRow(ctx, `SELECT o_status, o_same_id, o_same_key, o_same_decision, o_same_received_at
			FROM formd_place($1, $2, $3, $4, $5, $6)`, id, form, site, claims, fp, micro(s.now())).
			Scan(&o.Status, &same.id, &same.key, &same.decision, &same.receivedAt); err != nil {
			return err
		}
		o.Decision, o.SameAs = o.Status, same.original()
		return nil
	})
	if err != nil {
		return o, err
	}
	return o, refused
}

// postedOf is formd_decide_entry's p_posted: the facts of the uploads a
// plain HTML post carried (journal.Posted), a JSON array beside the ids
// with null for the others; nil when there are none.
func postedOf(ups []journal.Upload) ([]byte, error) {
	if !slices.ContainsFunc(ups, func(u journal.Upload) bool { return u.Posted != nil }) {
		return nil, nil
	}
	ps := make([]*journal.Posted, len(ups))
	for i, u := range ups {
		if u.Posted != nil {
			if _, err := u.Posted.Sum(); err != nil {
				return nil, err
			}
		}
		ps[i] = u.Posted
	}
	return json.Marshal(ps)
}
