// Package pgstore is the store driver for several formd instances: one
// PostgreSQL database that every instance decides into, through pgx v5.
//
// The rules are those of package store, enforced by the database as in the
// embedded store: unique indexes decide replays and duplicate participants,
// a guarded UPDATE on the form's capacity row decides places (its row lock
// serializes instances; READ COMMITTED re-checks the guard after the wait,
// so no place is sold twice). A decision is the SQL function formd_decide
// (migrations/0001_init.sql), so a batch of decisions is one pipelined round
// trip inside one transaction.
//
// Failures of the database itself (a lost connection, a server shutting
// down, a deadlock or serialization failure still there after a few quick
// retries) wrap store.ErrUnavailable, so the processor retries the batch
// and counts nothing against the entries.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

var _ store.Store = (*Store)(nil)

// schema is the store's migrations, applied by package migrate.
//
//go:embed migrations/*.sql
var schema embed.FS

// functions is the current PL/pgSQL of the store (functions.sql), defined
// again at every start after the migrations (dialect.Functions).
//
//go:embed functions.sql
var functions string

// Options configure the store.
type Options struct {
	// URL is the database, postgres://user@host:port/db?sslmode=...; pgx
	// settings such as pool_max_conns and search_path may be given in it.
	URL string
	// MaxConns bounds the pool (the server takes it from the setting
	// postgres-max-conns); pool_max_conns in the URL takes precedence,
	// and 0 leaves it to pgx (the larger of 4 and the CPUs).
	MaxConns int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Store is the PostgreSQL store.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// Open connects, applies the migrations not yet applied (one instance at a
// time) and returns the store.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("open store: parse URL: %w", err)
	}
	if opts.MaxConns > 0 && !strings.Contains(opts.URL, "pool_max_conns") {
		cfg.MaxConns = int32(min(opts.MaxConns, math.MaxInt32))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := upgrade(ctx, pool, where(cfg)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s@%s/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, classify("schema", err))
	}
	return &Store{pool: pool, now: opts.Now}, nil
}

// dialect is how the PostgreSQL store's migrations are recorded (package
// migrate): each transaction takes an advisory lock of the schema first,
// so that instances starting together migrate one at a time.
var dialect = migrate.Dialect{
	Lock:        `SELECT pg_advisory_xact_lock(hashtext('formd-migrate:' || coalesce(current_schema(), '')))`,
	CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`,
	Record:      `INSERT INTO schema_migrations(version, applied_at) VALUES ($1, now()) ON CONFLICT DO NOTHING`,
	HasTable:    `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = $1`,
	WrittenBy: `INSERT INTO written_by(one, release, schema, at) VALUES (1, $1, $2, now())
		ON CONFLICT (one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
	Functions: functions,
}

// migrations runs package migrate's transactions on the pool.
type migrations struct{ pool *pgxpool.Pool }

func (m migrations) QueryRow(ctx context.Context, q string, args ...any) migrate.Row {
	return m.pool.QueryRow(ctx, q, args...)
}

func (m migrations) InTx(ctx context.Context, fn func(migrate.Exec) error) error {
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		return fn(func(ctx context.Context, q string, args ...any) (int64, error) {
			tag, err := tx.Exec(ctx, q, args...)
			return tag.RowsAffected(), err
		})
	})
}

// classify marks failures of the database rather than of the data as
// store.ErrUnavailable. PostgreSQL's verdicts on the data (constraint,
// type and value errors) are the entries' own; everything else — no
// connection, a server going down, too many clients, a deadlock — is not.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !transientCode(pe.Code) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
}

// transientCode says a PostgreSQL error code is about the server or the
// transaction's luck rather than the data.
func transientCode(code string) bool {
	switch code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialization failure, deadlock
		"53", // insufficient resources: disk full, too many connections
		"57", // operator intervention: shutdown, crash, cannot connect now
		"58", // system error: I/O
		"XX": // internal error
		return true
	}
	return code == "55P03" || code == "25006" // lock not available; read-only (a failover in progress)
}

// retryable says a transaction failed on a deadlock or serialization
// failure, which succeeds when simply run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// inTx runs fn in a transaction, again up to three times on a deadlock or
// serialization failure, and classifies the error that remains.
func (s *Store) inTx(ctx context.Context, op string, fn func(pgx.Tx) error) error {
	var err error
	for attempt := range 4 {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt*attempt) * 5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return classify(op, ctx.Err())
			case <-t.C:
			}
		}
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return classify(op, err)
	}
	return nil
}

// Close closes the connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

func micro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// Apply decides the submissions in one transaction: one formd_decide call
// each, sent together as one batch.
func (s *Store) Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error) {
	out := make([]store.Outcome, len(subs))
	err := s.inTx(ctx, "apply", func(tx pgx.Tx) error {
		now := micro(s.now())
		b := &pgx.Batch{}
		for i := range subs {
			sub := &subs[i]
			claims := sub.Claims
			if claims == nil {
				claims = []string{}
			}
			b.Queue(`SELECT o_id, o_decision, o_status, o_received_at, o_fingerprint, o_replayed,
				o_same_id, o_same_key, o_same_decision, o_same_received_at
				FROM formd_decide($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
				sub.ID, int64(sub.Seq), sub.Form, sub.Site, sub.Key, sub.Spam, micro(sub.ReceivedAt), now,
				sub.Fingerprint[:], claims, []byte(sub.Data))
		}
		br := tx.SendBatch(ctx, b)
		for i := range subs {
			o := store.Outcome{Form: subs[i].Form, Key: subs[i].Key}
			var fp []byte
			var same sameAs
			if err := br.QueryRow().Scan(&o.ID, &o.Decision, &o.Status, &o.ReceivedAt, &fp, &o.Replayed,
				&same.id, &same.key, &same.decision, &same.receivedAt); err != nil {
				br.Close()
				return fmt.Errorf("decide %s/%s: %w", subs[i].Form, subs[i].Key, err)
			}
			copy(o.Fingerprint[:], fp)
			o.SameAs = same.original()
			out[i] = o
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
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
	var fp []byte
	var same sameAs
	err := q.QueryRow(ctx, `SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, o.id, o.key, o.decision, o.received_at
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = $1 AND e.key = $2`, form, key).
		Scan(&o.ID, &o.Decision, &o.Status, &o.ReceivedAt, &fp, &same.id, &same.key, &same.decision, &same.receivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	copy(o.Fingerprint[:], fp)
	o.SameAs = same.original()
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
	form, key := sub.Form, sub.Key
	o, ok, err := outcome(ctx, q, form, key)
	if err == nil && !ok {
		err = q.QueryRow(ctx, `SELECT form, key FROM entries WHERE id = $1`, sub.ID).Scan(&form, &key)
		if err == nil {
			o, ok, err = outcome(ctx, q, form, key)
		}
	}
	if err == nil && !ok {
		err = fmt.Errorf("no entry has key %s/%s or id %s", sub.Form, sub.Key, sub.ID)
	}
	o.Replayed = true
	return o, err
}

// DeadLetters lists dead letters, oldest first.
func (s *Store) DeadLetters(ctx context.Context, limit int) ([]store.DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT d.entry_id, d.form, d.key, d.seq, d.reason, d.attempts, d.at FROM dead_letters d
		JOIN entries e ON e.id = d.entry_id AND e.status = 'dead-lettered' ORDER BY d.at, d.entry_id LIMIT $1`, limit)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.DeadLetter, error) {
		var d store.DeadLetter
		var seq int64
		err := r.Scan(&d.ID, &d.Form, &d.Key, &seq, &d.Reason, &d.Attempts, &d.At)
		d.Seq = uint64(seq)
		return d, err
	})
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

// Cancel marks a live entry cancelled, frees its claims and place, and
// promotes the waitlist.
func (s *Store) Cancel(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "cancel", form, id, `UPDATE entries SET status = 'cancelled' WHERE id = $1`, store.StatusCancelled)
}

// takeOut takes a live entry out — cancelled, or marked spam — with set
// (its new status, and decision for spam): its claims and place freed, its
// submission.cancelled event with status, and the waitlist promoted, in
// one transaction. The entry's row is locked first, so two of them on one
// entry do not both free a place.
func (s *Store) takeOut(ctx context.Context, op, form, id, set, status string) ([]string, error) {
	var promoted []string
	var refused error
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		promoted, refused = nil, nil
		var was string
		err := tx.QueryRow(ctx, `SELECT status FROM entries WHERE form = $1 AND id = $2 FOR UPDATE`, form, id).Scan(&was)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
			return nil
		}
		if err != nil {
			return err
		}
		if was != store.StatusStored && was != store.StatusWaitlisted {
			refused = fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotLive)
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(set, id)
		b.Queue(`SELECT formd_event($1, 'submission.cancelled', $2, (SELECT site FROM entries WHERE id = $1), $3, $4)`, id, form, status, micro(s.now()))
		b.Queue(`DELETE FROM claims WHERE entry_id = $1`, id)
		if was == store.StatusStored {
			b.Queue(`UPDATE capacity SET taken = taken - 1 WHERE form = $1 AND taken > 0`, form)
		}
		b.Queue(`SELECT coalesce(array_agg(p), '{}') FROM formd_promote($1, $2) p`, form, micro(s.now())).QueryRow(func(r pgx.Row) error {
			return r.Scan(&promoted)
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return promoted, nil
}

// timeOrNull is t, or NULL for the zero time.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = micro(t)
	return &t
}

// PutSetting stores value under name unless a value is there, and returns
// the value stored.
func (s *Store) PutSetting(ctx context.Context, name string, value []byte) ([]byte, error) {
	var stored []byte
	err := s.inTx(ctx, "put setting "+name, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `INSERT INTO settings(name, value) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET value = settings.value RETURNING value`, name, value).Scan(&stored)
	})
	return stored, err
}

// Entries reads a page of a form's entries, newest first.
func (s *Store) Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error) {
	where, args := entryFilter(q)
	args = append(args, store.PageSize(q.Limit))
	rows, err := s.pool.Query(ctx, `SELECT seq, id, key, status, received_at, data FROM entries WHERE `+
		where+` ORDER BY seq DESC, id DESC LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, classify("list entries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Row, error) {
		row := store.Row{Form: q.Form}
		var seq int64
		err := r.Scan(&seq, &row.ID, &row.Key, &row.Status, &row.ReceivedAt, &row.Data)
		row.Seq = uint64(seq)
		return row, err
	})
	if err != nil {
		return nil, classify("list entries", err)
	}
	return out, nil
}

// History lists an entry's events, oldest first.
func (s *Store) History(ctx context.Context, entryID string) ([]store.Event, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, entry_id, n, type, form, site, status, at FROM events WHERE entry_id = $1 ORDER BY seq`, entryID)
	if err != nil {
		return nil, classify("read history", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Event, error) {
		var e store.Event
		var seq int64
		err := r.Scan(&seq, &e.EntryID, &e.N, &e.Type, &e.Form, &e.Site, &e.Status, &e.At)
		e.Seq = uint64(seq)
		return e, err
	})
	if err != nil {
		return nil, classify("read history", err)
	}
	return out, nil
}

// MarkSpam takes a live entry out as spam, freeing its claims and place
// and promoting the waitlist.
func (s *Store) MarkSpam(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "mark spam", form, id, `UPDATE entries SET status = 'spam', decision = 'spam' WHERE id = $1`, store.StatusSpam)
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

// PutForms upserts definitions and capacity settings in one transaction.
// The version counter's row lock orders concurrent calls, so versions
// follow commit order and a reader never skips one.
func (s *Store) PutForms(ctx context.Context, forms []form.Record) error {
	return s.inTx(ctx, "put forms", func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `UPDATE meta SET v = v + 1 WHERE k = 'forms_version' RETURNING v`).Scan(&version); err != nil {
			return fmt.Errorf("version: %w", err)
		}
		now := micro(s.now())
		b := &pgx.Batch{}
		for _, f := range forms {
			var limit *int
			if f.Capacity != nil {
				n := *f.Capacity
				limit = &n
			}
			whenFull := f.WhenFull
			if whenFull == "" {
				whenFull = "reject"
			}
			b.Queue(`INSERT INTO forms(id, site, source, version, updated_at) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET site = excluded.site, source = excluded.source, version = excluded.version, updated_at = excluded.updated_at`,
				f.ID, f.Site, f.Source, version, now)
			uniqueAnswer := f.UniqueAnswer
			if uniqueAnswer == "" {
				uniqueAnswer = form.UniqueAnswerGeneric
			}
			b.Queue(`INSERT INTO capacity(form, capacity, when_full, unique_answer, taken) VALUES ($1, $2, $3, $4, 0)
				ON CONFLICT (form) DO UPDATE SET capacity = excluded.capacity, when_full = excluded.when_full, unique_answer = excluded.unique_answer`,
				f.ID, limit, whenFull, uniqueAnswer)
			b.Queue(`SELECT count(*) FROM formd_promote($1, $2)`, f.ID, now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// Forms returns the forms changed after version, up to the newest version
// committed when it looked.
func (s *Store) Forms(ctx context.Context, after int64) ([]form.Record, int64, error) {
	var latest int64
	if err := s.pool.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'forms_version'`).Scan(&latest); err != nil {
		return nil, 0, classify("read forms version", err)
	}
	if latest <= after {
		return nil, latest, nil
	}
	// No upper bound: a form changed by a commit between the two reads
	// has a version above latest and would otherwise be left out of this
	// answer although its old version is no longer there either (an
	// instance starting beside another applying forms knew no form for a
	// moment). Read again next time, it is only read twice.
	rows, err := s.pool.Query(ctx, `SELECT f.id, f.site, f.source, f.version, f.updated_at, c.capacity, c.when_full
		FROM forms f LEFT JOIN capacity c ON c.form = f.id WHERE f.version > $1 ORDER BY f.id`, after)
	if err != nil {
		return nil, 0, classify("read forms", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (form.Record, error) {
		var (
			f        form.Record
			limit    *int32
			whenFull *string
		)
		err := r.Scan(&f.ID, &f.Site, &f.Source, &f.Version, &f.UpdatedAt, &limit, &whenFull)
		if limit != nil {
			n := int(*limit)
			f.Capacity = &n
		}
		if whenFull != nil {
			f.WhenFull = *whenFull
		}
		return f, err
	})
	if err != nil {
		return nil, 0, classify("read forms", err)
	}
	return out, latest, nil
}

// Capacities reports places per form.
func (s *Store) Capacities(ctx context.Context) (map[string]store.Capacity, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.form, c.capacity, c.taken,
		(SELECT count(*) FROM entries e WHERE e.form = c.form AND e.status = 'waitlisted') FROM capacity c`)
	if err != nil {
		return nil, classify("read capacity", err)
	}
	defer rows.Close()
	out := map[string]store.Capacity{}
	for rows.Next() {
		var (
			form       string
			limit      *int32
			taken      int32
			waitlisted int64
		)
		if err := rows.Scan(&form, &limit, &taken, &waitlisted); err != nil {
			return nil, classify("read capacity", err)
		}
		c := store.Capacity{Taken: int(taken), Waitlisted: int(waitlisted)}
		if limit != nil {
			n := int(*limit)
			c.Limit = &n
		}
		out[form] = c
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read capacity", err)
	}
	return out, nil
}

// Erase removes the data and claims of old entries of a form, oldest
// first (by id among equals). Rows another instance is erasing are
// skipped, not waited for.
func (s *Store) Erase(ctx context.Context, form string, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	return s.erase(ctx, "erase old data", `SELECT id FROM entries WHERE form = $1 AND received_at < $2 AND data IS NOT NULL
		ORDER BY received_at, id LIMIT $3 FOR UPDATE SKIP LOCKED`, form, before, limit)
}

// EraseEntries erases the entries with these ids.
func (s *Store) EraseEntries(ctx context.Context, ids []string) (int, error) {
	return s.erase(ctx, "erase entries", `SELECT id FROM entries WHERE id = ANY($1) AND data IS NOT NULL FOR UPDATE`, ids)
}

// erase erases the entries the query selects, in one statement.
func (s *Store) erase(ctx context.Context, op, selectIDs string, args ...any) (int, error) {
	var n int
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH target AS (`+selectIDs+`),
			released AS (DELETE FROM claims WHERE entry_id IN (SELECT id FROM target)),
			erased AS (UPDATE entries SET data = NULL, claims = '{}' WHERE id IN (SELECT id FROM target) RETURNING 1)
			SELECT count(*) FROM erased`, args...).Scan(&n)
	})
	return n, err
}

// FindEntries lists entries whose data holds one of the needles.
func (s *Store) FindEntries(ctx context.Context, needles [][]byte, limit int) ([]store.EntryRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, site, form, key, seq FROM entries
		WHERE data IS NOT NULL AND EXISTS (SELECT 1 FROM unnest($1::bytea[]) n WHERE position(n IN data) > 0)
		ORDER BY received_at, id LIMIT $2`, needles, limit)
	if err != nil {
		return nil, classify("find entries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.EntryRef, error) {
		var e store.EntryRef
		var seq int64
		err := r.Scan(&e.ID, &e.Site, &e.Form, &e.Key, &seq)
		e.Seq = uint64(seq)
		return e, err
	})
	if err != nil {
		return nil, classify("find entries", err)
	}
	return out, nil
}

// Export streams a form's entries in arrival order, a page at a time by
// (seq, id) keyset, each page its own query so no transaction stays open
// while fn works.
func (s *Store) Export(ctx context.Context, form string, fn func(store.Row) error) error {
	afterSeq, afterID := int64(-1), ""
	for {
		rows, err := s.pool.Query(ctx, `SELECT seq, id, key, status, received_at, data FROM entries
			WHERE form = $1 AND (seq, id) > ($2, $3) ORDER BY seq, id LIMIT $4`, form, afterSeq, afterID, store.ExportPage)
		if err != nil {
			return classify("export", err)
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Row, error) {
			row := store.Row{Form: form}
			var seq int64
			var data []byte
			err := r.Scan(&seq, &row.ID, &row.Key, &row.Status, &row.ReceivedAt, &data)
			row.Seq, row.Data = uint64(seq), data
			return row, err
		})
		if err != nil {
			return classify("export", err)
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
			afterSeq, afterID = int64(r.Seq), r.ID
		}
		if len(page) < store.ExportPage {
			return nil
		}
	}
}

// firstOwnerOfAll is the first account that is an owner of every site
// (accounts.Account.OwnsAll), NULL while there is none.
const firstOwnerOfAll = `(SELECT id FROM accounts WHERE role = 'owner' AND sites = '{*}' ORDER BY created_at, id LIMIT 1)`

// PutToken stores a token hash under a name.
func (s *Store) PutToken(ctx context.Context, name string, hash []byte, ifAbsent bool) (bool, error) {
	// The token belongs to the first owner of every site, if there is
	// one yet (else that account adopts it when made).
	q := `INSERT INTO tokens(name, hash, created_at, account_id) VALUES ($1, $2, $3, ` + firstOwnerOfAll + `)
		ON CONFLICT (name) DO UPDATE SET hash = excluded.hash, created_at = excluded.created_at, used_at = NULL, revoked_at = NULL,
			account_id = coalesce(tokens.account_id, excluded.account_id)`
	if ifAbsent {
		q = `INSERT INTO tokens(name, hash, created_at, account_id) VALUES ($1, $2, $3, ` + firstOwnerOfAll + `) ON CONFLICT (name) DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, q, name, hash, micro(s.now()))
	if err != nil {
		return false, classify("put token", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TokenValid says whether a token with this hash exists, and marks it
// used the first time.
func (s *Store) TokenValid(ctx context.Context, hash []byte) (bool, error) {
	var used *time.Time
	err := s.pool.QueryRow(ctx, `SELECT used_at FROM tokens WHERE hash = $1 AND revoked_at IS NULL`, hash).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, classify("check token", err)
	}
	if used == nil {
		if _, err := s.pool.Exec(ctx, `UPDATE tokens SET used_at = $1 WHERE hash = $2 AND used_at IS NULL`, micro(s.now()), hash); err != nil {
			return false, classify("mark token used", err)
		}
	}
	return true, nil
}

// FunctionsSQL is functions.sql, the store's functions as every start
// defines them, for tests that compare a database with it.
func FunctionsSQL() string { return functions }
