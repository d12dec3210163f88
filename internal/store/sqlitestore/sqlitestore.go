// Package sqlitestore is the embedded store driver: its own SQLite file (so
// that a damaged store can be rebuilt from the journal), WAL mode with
// synchronous=FULL, one write connection that serializes decisions, and a
// pool of readers.
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/migrate"
	"github.com/mattn/go-sqlite3"
)

var _ store.Store = (*Store)(nil)

// schema is the store's migrations, applied by package migrate.
//
//go:embed migrations/*.sql
var schema embed.FS

// Options configure the store.
type Options struct {
	Path string
	// Readers is the size of the pool of read connections (the server
	// takes it from the setting sqlite-readers); 0 for one per CPU.
	Readers int
	// Writer, when set, is the write connection to use instead of one of
	// the store's own: the shared writer of the embedded fast path
	// (sqlitedb.OpenShared), on which this file is attached. The store
	// migrates its file on a connection of its own first. It closes
	// Writer with itself: close the journal that shares it first. See
	// ApplyIn.
	Writer *sql.DB
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Store is the SQLite store.
type Store struct {
	wdb *sql.DB
	rdb *sql.DB
	now func() time.Time
	// hot are the decision statements, prepared once on the write
	// connection and bound to each transaction.
	hot *stmts
	// shared says wdb is the shared writer of the embedded fast path.
	shared bool
	// erasedSinceTruncate says a full chunk of retention was erased and
	// only checkpointed: the chunk after it truncates the WAL, even when it
	// finds nothing more.
	erasedSinceTruncate atomic.Bool
}

// Open opens the store file, creating it and applying migrations as needed.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Path == "" {
		return nil, errors.New("open store: no path")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Readers <= 0 {
		opts.Readers = runtime.GOMAXPROCS(0)
	}
	wdb, err := sqlitedb.OpenWriter(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := upgrade(ctx, wdb, opts.Path); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store %s: %w", opts.Path, err)
	}
	shared := opts.Writer != nil
	if shared {
		// Migrated: from now on every write goes through the shared one.
		if err := wdb.Close(); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		wdb = opts.Writer
	}
	rdb, err := sqlitedb.OpenReader(opts.Path, opts.Readers)
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	hot, err := prepare(ctx, wdb)
	if err != nil {
		wdb.Close()
		rdb.Close()
		return nil, fmt.Errorf("open store: prepare: %w", err)
	}
	return &Store{wdb: wdb, rdb: rdb, now: opts.Now, hot: hot, shared: shared}, nil
}

// dialect is how the embedded store's migrations are recorded (package
// migrate); one write connection means no lock is needed.
var dialect = migrate.Dialect{
	CreateTable: `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
	Record: `INSERT INTO schema_migrations(version, applied_at)
		VALUES (?, CAST(unixepoch('subsec') * 1000000 AS INTEGER)) ON CONFLICT DO NOTHING`,
	HasTable: `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = ?`,
	WrittenBy: `INSERT INTO written_by(one, release, schema, at) VALUES (1, ?, ?, CAST(unixepoch('subsec') * 1000000 AS INTEGER))
		ON CONFLICT(one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
}

// classify marks failures of the database itself as store.ErrUnavailable.
func classify(op string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrNomem:
			return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, sql.ErrConnDone) {
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Close closes the file.
func (s *Store) Close() error {
	s.hot.close()
	if err := errors.Join(s.wdb.Close(), s.rdb.Close()); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// releaseClaims frees the participant claims an entry (?1) holds: those
// of its own list (entries.claims: hex tokens separated by commas) that
// are still its, found by the primary key.
var releaseClaims = `DELETE FROM claims WHERE entry_id = ?1 AND (form, claim) IN (
	SELECT e.form, ` + claimKey("j.value") + ` FROM entries e, json_each('["' || replace(e.claims, ',', '","') || '"]') j
	WHERE e.id = ?1 AND e.claims != '')`

// claimKey is how a claim token (hex) is kept in the claims table: its
// bytes; a token that is not hex (none is made so) as its text's bytes.
func claimKey(token string) string {
	return "coalesce(unhex(" + token + "), CAST(" + token + " AS BLOB))"
}

// stmts are the prepared statements of one decision transaction.
type stmts struct {
	insert, claim, release, take, whenFull, fullGeneric, setStatus, holder, sameAs, event *sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*stmts, error) {
	var st stmts
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&st.insert, `INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(form, key) DO NOTHING`},
		{&st.claim, `INSERT INTO claims(form, claim, entry_id) VALUES (?1, ` + claimKey("?2") + `, ?3) ON CONFLICT(form, claim) DO NOTHING`},
		{&st.release, releaseClaims},
		{&st.take, `UPDATE capacity SET taken = taken + 1 WHERE form = ? AND (capacity IS NULL OR taken < capacity)`},
		{&st.whenFull, `SELECT when_full FROM capacity WHERE form = ?`},
		{&st.fullGeneric, `SELECT count(*) FROM capacity WHERE form = ? AND capacity IS NOT NULL AND taken >= capacity
			AND when_full != 'waitlist' AND unique_answer = 'generic'`},
		{&st.setStatus, `UPDATE entries SET status = ?, decision = ? WHERE form = ? AND key = ?`},
		{&st.holder, `SELECT e.id, e.key, e.decision, e.received_at, e.fingerprint FROM claims c JOIN entries e ON e.id = c.entry_id
			WHERE c.form = ?1 AND c.claim = ` + claimKey("?2")},
		{&st.sameAs, `UPDATE entries SET same_as = ? WHERE id = ?`},
		// A decision's event is its entry's first (the entry row was just
		// inserted): n is 1. INSERT … SELECT max(n) FROM events would cost
		// SQLite a temporary table per row, as it reads the table it
		// writes: more than the rest of the decision.
		{&st.event, `INSERT INTO events(entry_id, n, type, form, site, status, at) VALUES (?1, 1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT(entry_id, type, n) DO NOTHING`},
	} {
		s, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			st.close()
			return nil, err
		}
		*p.dst = s
	}
	return &st, nil
}

// in binds the statements to a transaction; on the one write connection
// database/sql reuses the prepared statements rather than preparing again.
func (st *stmts) in(ctx context.Context, tx *sql.Tx) *stmts {
	return &stmts{
		insert: tx.StmtContext(ctx, st.insert), claim: tx.StmtContext(ctx, st.claim),
		release: tx.StmtContext(ctx, st.release), take: tx.StmtContext(ctx, st.take),
		whenFull: tx.StmtContext(ctx, st.whenFull), fullGeneric: tx.StmtContext(ctx, st.fullGeneric), setStatus: tx.StmtContext(ctx, st.setStatus),
		holder: tx.StmtContext(ctx, st.holder), sameAs: tx.StmtContext(ctx, st.sameAs), event: tx.StmtContext(ctx, st.event),
	}
}

func (st *stmts) close() {
	for _, s := range []*sql.Stmt{st.insert, st.claim, st.release, st.take, st.whenFull, st.fullGeneric, st.setStatus, st.holder, st.sameAs, st.event} {
		if s != nil {
			s.Close()
		}
	}
}

// Apply decides the submissions in one transaction (see package store for
// the rules). The entry row is inserted first, as stored, so that its
// unique (form, key) index decides replays; a duplicate, waitlisted or
// rejected decision then rewrites its status in the same transaction.
func (s *Store) Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify("apply: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	out, err := s.applyTx(ctx, tx, subs)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, classify("apply: commit", err)
	}
	return out, nil
}

// ApplyIn decides the submissions as Apply does, in tx, a transaction on
// the shared writer (Options.Writer) that its holder commits: the
// embedded fast path, where the journal's writer appends and decides in
// one commit. A failure leaves tx as it was before the call (a
// savepoint), so the holder may commit the rest.
func (s *Store) ApplyIn(ctx context.Context, tx *sql.Tx, subs []journal.Entry) ([]store.Outcome, error) {
	if !s.shared {
		return nil, errors.New("apply in a transaction: the store has no shared writer (Options.Writer)")
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT apply`); err != nil {
		return nil, classify("apply: savepoint", err)
	}
	out, err := s.applyTx(ctx, tx, subs)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO apply; RELEASE apply`); rerr != nil {
			return nil, errors.Join(err, classify("apply: roll back to the savepoint", rerr))
		}
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `RELEASE apply`); err != nil {
		return nil, classify("apply: release the savepoint", err)
	}
	return out, nil
}

// Shared says the store writes through the shared writer of the
// embedded fast path (Options.Writer), so that ApplyIn may be used.
func (s *Store) Shared() bool { return s.shared }

// applyTx decides the submissions in tx.
func (s *Store) applyTx(ctx context.Context, tx *sql.Tx, subs []journal.Entry) ([]store.Outcome, error) {
	st := s.hot.in(ctx, tx)
	defer st.close()
	now := s.now().UnixMicro()
	out := make([]store.Outcome, len(subs))
	for i := range subs {
		o, err := s.decide(ctx, tx, st, &subs[i], now)
		if err == nil && !o.Replayed {
			if typ := store.EventFor(o.Decision); typ != "" {
				_, err = st.event.ExecContext(ctx, o.ID, typ, o.Form, subs[i].Site, o.Status, now)
			}
		}
		if err != nil {
			return nil, classify(fmt.Sprintf("apply %s/%s", subs[i].Form, subs[i].Key), err)
		}
		out[i] = o
	}
	return out, nil
}

func (s *Store) decide(ctx context.Context, tx *sql.Tx, st *stmts, sub *journal.Entry, now int64) (store.Outcome, error) {
	status := store.StatusStored
	if sub.Spam {
		status = store.StatusSpam
	}
	res, err := st.insert.ExecContext(ctx, sub.ID, sub.Seq, sub.Form, sub.Site, sub.Key, status, status,
		sub.ReceivedAt.UnixMicro(), now, sub.Fingerprint[:], strings.Join(sub.Claims, ","), []byte(sub.Data))
	if err != nil {
		return store.Outcome{}, fmt.Errorf("insert entry: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		o, ok, err := outcome(ctx, tx, sub.Form, sub.Key)
		if err != nil || !ok {
			return o, fmt.Errorf("read earlier outcome (found %v): %w", ok, err)
		}
		o.Replayed = true
		return o, nil
	}
	o := store.Outcome{ID: sub.ID, Form: sub.Form, Key: sub.Key, Decision: status, Status: status,
		ReceivedAt: sub.ReceivedAt, Fingerprint: sub.Fingerprint}
	// uploads: the entry's files are claimed before anything else is decided.
	if refused, err := claimUploads(ctx, tx, sub); err != nil || refused != "" {
		if err != nil {
			return o, err
		}
		return s.settle(ctx, st, o, refused, false)
	}
	if sub.Spam {
		return o, nil
	}
	return s.place(ctx, st, o, sub.Claims)
}

// place decides the participant and the place of an entry whose row is
// in, as stored (see package store for the rules): its claims, then a
// guarded place, then the waitlist or a rejection. The decision of a new
// submission, and of a submission an owner marks as not spam.
func (s *Store) place(ctx context.Context, st *stmts, o store.Outcome, claims []string) (store.Outcome, error) {
	for i, c := range claims {
		if slices.Contains(claims[:i], c) {
			continue // listed twice: one participant, claimed already
		}
		res, err := st.claim.ExecContext(ctx, o.Form, c, o.ID)
		if err != nil {
			return o, fmt.Errorf("claim: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := resendOf(ctx, st, &o, o.Form, c); err != nil {
				return o, err
			}
			if o.SameAs == nil {
				// Another participant's claim: on a full form that turns
				// people away, unique_answer generic answers it as
				// anyone new is answered (see package store).
				var full int
				if err := st.fullGeneric.QueryRowContext(ctx, o.Form).Scan(&full); err != nil {
					return o, fmt.Errorf("read whether the form is full: %w", err)
				}
				if full > 0 {
					return s.settle(ctx, st, o, store.StatusRejected, true)
				}
			}
			return s.settle(ctx, st, o, store.StatusDuplicate, true)
		}
	}
	res, err := st.take.ExecContext(ctx, o.Form)
	if err != nil {
		return o, fmt.Errorf("take a place: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return o, nil
	}
	var whenFull string
	switch err := st.whenFull.QueryRowContext(ctx, o.Form).Scan(&whenFull); {
	case errors.Is(err, sql.ErrNoRows):
		return o, nil // a form the store has no settings for has no limit
	case err != nil:
		return o, fmt.Errorf("read when_full: %w", err)
	case whenFull == "waitlist":
		return s.settle(ctx, st, o, store.StatusWaitlisted, false)
	default:
		return s.settle(ctx, st, o, store.StatusRejected, true)
	}
}

// resendOf looks at the live entry holding a claim the submission could
// not take: when its content is exactly the submission's, the submission
// is a resend of that entry (SameAs), not another participant.
func resendOf(ctx context.Context, st *stmts, o *store.Outcome, form, claim string) error {
	var (
		orig store.Original
		us   int64
		fp   []byte
	)
	err := st.holder.QueryRowContext(ctx, form, claim).Scan(&orig.ID, &orig.Key, &orig.Decision, &us, &fp)
	if err != nil {
		return fmt.Errorf("read the claim's holder: %w", err)
	}
	if string(fp) != string(o.Fingerprint[:]) {
		return nil
	}
	if _, err := st.sameAs.ExecContext(ctx, orig.ID, o.ID); err != nil {
		return fmt.Errorf("record the resend: %w", err)
	}
	orig.ReceivedAt = time.UnixMicro(us)
	o.SameAs = &orig
	return nil
}

// settle rewrites a just-inserted entry's status, releasing its claims when
// it is not live.
func (s *Store) settle(ctx context.Context, st *stmts, o store.Outcome, status string, release bool) (store.Outcome, error) {
	if release {
		if _, err := st.release.ExecContext(ctx, o.ID); err != nil {
			return o, fmt.Errorf("release claims: %w", err)
		}
	}
	if _, err := st.setStatus.ExecContext(ctx, status, status, o.Form, o.Key); err != nil {
		return o, fmt.Errorf("set status: %w", err)
	}
	o.Status, o.Decision = status, status
	return o, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func outcome(ctx context.Context, q queryer, form, key string) (store.Outcome, bool, error) {
	var (
		o             store.Outcome
		us            int64
		fp            []byte
		status        string
		sameID, sameK sql.NullString
		sameD         sql.NullString
		sameAt        sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, o.id, o.key, o.decision, o.received_at
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = ? AND e.key = ?`, form, key).
		Scan(&o.ID, &o.Decision, &status, &us, &fp, &sameID, &sameK, &sameD, &sameAt)
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	o.Form, o.Key, o.Status = form, key, status
	o.ReceivedAt = time.UnixMicro(us)
	copy(o.Fingerprint[:], fp)
	if sameID.Valid {
		o.SameAs = &store.Original{ID: sameID.String, Key: sameK.String, Decision: sameD.String, ReceivedAt: time.UnixMicro(sameAt.Int64)}
	}
	return o, true, nil
}

// Outcome reads the outcome of (form, key).
func (s *Store) Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error) {
	o, ok, err := outcome(ctx, s.rdb, form, key)
	if err != nil {
		return o, false, classify("read outcome", err)
	}
	return o, ok, nil
}

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
	form, key := sub.Form, sub.Key
	o, ok, err := outcome(ctx, q, form, key)
	if err == nil && !ok {
		err = q.QueryRowContext(ctx, `SELECT form, key FROM entries WHERE id = ?`, sub.ID).Scan(&form, &key)
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
	// CROSS JOIN keeps the few dead letters the outer loop: left to
	// itself, SQLite scanned every entry for its status, on every
	// /metrics scrape.
	rows, err := s.rdb.QueryContext(ctx, `SELECT d.entry_id, d.form, d.key, d.seq, d.reason, d.attempts, d.at FROM dead_letters d
		CROSS JOIN entries e ON e.id = d.entry_id AND e.status = 'dead-lettered' ORDER BY d.at, d.entry_id LIMIT ?`, limit)
	if err != nil {
		return nil, classify("list dead letters", err)
	}
	defer rows.Close()
	var out []store.DeadLetter
	for rows.Next() {
		var d store.DeadLetter
		var at int64
		if err := rows.Scan(&d.ID, &d.Form, &d.Key, &d.Seq, &d.Reason, &d.Attempts, &at); err != nil {
			return nil, classify("list dead letters", err)
		}
		d.At = time.UnixMicro(at)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
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

// Cancel marks a live entry cancelled, frees its claims and place, and
// promotes the waitlist.
func (s *Store) Cancel(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "cancel", form, id, `UPDATE entries SET status = 'cancelled' WHERE id = ?`, store.StatusCancelled)
}

// takeOut takes a live entry out — cancelled, or marked spam — with set
// (its new status, and decision for spam): its claims and place freed, its
// submission.cancelled event with status, and the waitlist promoted, in
// one transaction (the one writer serializes them).
func (s *Store) takeOut(ctx context.Context, op, form, id, set, status string) ([]string, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var was string
	err = tx.QueryRowContext(ctx, `SELECT status FROM entries WHERE form = ? AND id = ?`, form, id).Scan(&was)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s %s/%s: %w", op, form, id, store.ErrNotFound)
	}
	if err != nil {
		return nil, classify(op, err)
	}
	if was != store.StatusStored && was != store.StatusWaitlisted {
		return nil, fmt.Errorf("%s %s/%s (status %s): %w", op, form, id, was, store.ErrNotLive)
	}
	// The claims go first: releasing reads the entry's own list of them.
	if _, err := tx.ExecContext(ctx, releaseClaims, id); err != nil {
		return nil, classify(op+": release claims", err)
	}
	if _, err := tx.ExecContext(ctx, set, id); err != nil {
		return nil, classify(op, err)
	}
	now := s.now()
	if err := recordEvent(ctx, tx, id, store.EventCancelled, status, now); err != nil {
		return nil, classify(op+": event", err)
	}
	if was == store.StatusStored {
		if _, err := tx.ExecContext(ctx, `UPDATE capacity SET taken = taken - 1 WHERE form = ? AND taken > 0`, form); err != nil {
			return nil, classify(op+": free place", err)
		}
	}
	promoted, err := promote(ctx, tx, form, now)
	if err != nil {
		return nil, classify(op+": promote", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, classify(op+": commit", err)
	}
	return promoted, nil
}

// recordEvent writes an event of an entry in the transaction that changes
// it: the next occurrence of its type.
func recordEvent(ctx context.Context, tx *sql.Tx, entryID, typ, status string, at time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO events(entry_id, n, type, form, site, status, at)
		SELECT e.id, (SELECT coalesce(max(n), 0) + 1 FROM events WHERE entry_id = e.id AND type = ?2), ?2, e.form, e.site, ?3, ?4
		FROM entries e WHERE e.id = ?1`, entryID, typ, status, at.UnixMicro())
	if err != nil {
		return fmt.Errorf("record %s: %w", typ, err)
	}
	return nil
}

// Entries reads a page of a form's entries, newest first.
func (s *Store) Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error) {
	where, args := entryFilter(q)
	args = append(args, store.PageSize(q.Limit))
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, id, key, status, received_at, data FROM entries WHERE `+
		where+` ORDER BY seq DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, classify("list entries", err)
	}
	defer rows.Close()
	var out []store.Row
	for rows.Next() {
		r := store.Row{Form: q.Form}
		var us int64
		var data []byte // NULL once erased
		if err := rows.Scan(&r.Seq, &r.ID, &r.Key, &r.Status, &us, &data); err != nil {
			return nil, classify("list entries", err)
		}
		r.Data = data
		r.ReceivedAt = time.UnixMicro(us)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("list entries", err)
	}
	return out, nil
}

// History lists an entry's events, oldest first.
func (s *Store) History(ctx context.Context, entryID string) ([]store.Event, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT seq, entry_id, n, type, form, site, status, at FROM events WHERE entry_id = ? ORDER BY seq`, entryID)
	if err != nil {
		return nil, classify("read history", err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var at int64
		if err := rows.Scan(&e.Seq, &e.EntryID, &e.N, &e.Type, &e.Form, &e.Site, &e.Status, &at); err != nil {
			return nil, classify("read history", err)
		}
		e.At = time.UnixMicro(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read history", err)
	}
	return out, nil
}

// MarkSpam takes a live entry out as spam: its claims and place are
// freed, the waitlist promoted, and its decision becomes spam (a retry of
// its key is answered "received").
func (s *Store) MarkSpam(ctx context.Context, form, id string) ([]string, error) {
	return s.takeOut(ctx, "mark spam", form, id, `UPDATE entries SET status = 'spam', decision = 'spam' WHERE id = ?`, store.StatusSpam)
}

// NotSpam decides an entry classed as spam again, as a real submission:
// its participant and place as for a new one, in one transaction.
func (s *Store) NotSpam(ctx context.Context, form, id string) (store.Outcome, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return store.Outcome{}, classify("not spam: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var (
		o       = store.Outcome{ID: id, Form: form}
		status  string
		site    string
		claims  string
		us      int64
		fp      []byte
		hasData bool
	)
	err = tx.QueryRowContext(ctx, `SELECT key, site, status, claims, received_at, fingerprint, data IS NOT NULL FROM entries WHERE form = ? AND id = ?`, form, id).
		Scan(&o.Key, &site, &status, &claims, &us, &fp, &hasData)
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("not spam %s/%s: %w", form, id, store.ErrNotFound)
	}
	if err != nil {
		return o, classify("not spam", err)
	}
	if status != store.StatusSpam || !hasData {
		return o, fmt.Errorf("not spam %s/%s (status %s): %w", form, id, status, store.ErrNotSpam)
	}
	o.ReceivedAt = time.UnixMicro(us)
	copy(o.Fingerprint[:], fp)
	o.Decision, o.Status = store.StatusStored, store.StatusStored
	st := s.hot.in(ctx, tx)
	defer st.close()
	if _, err := st.setStatus.ExecContext(ctx, store.StatusStored, store.StatusStored, form, o.Key); err != nil {
		return o, classify("not spam", err)
	}
	var list []string
	if claims != "" {
		list = strings.Split(claims, ",")
	}
	if o, err = s.place(ctx, st, o, list); err != nil {
		return o, classify("not spam", err)
	}
	if typ := store.EventFor(o.Decision); typ != "" {
		if _, err := st.event.ExecContext(ctx, o.ID, typ, form, site, o.Status, s.now().UnixMicro()); err != nil {
			return o, classify("not spam: event", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return o, classify("not spam: commit", err)
	}
	return o, nil
}

// promote moves the oldest waitlisted entries into free places, one guarded
// place at a time, in (seq, id) order (see store.Cursor).
func promote(ctx context.Context, tx *sql.Tx, form string, now time.Time) ([]string, error) {
	var promoted []string
	for {
		var id string
		err := tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE form = ? AND status = 'waitlisted' ORDER BY seq, id LIMIT 1`, form).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return promoted, nil
		}
		if err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE capacity SET taken = taken + 1 WHERE form = ? AND (capacity IS NULL OR taken < capacity)`, form)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return promoted, nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE entries SET status = 'stored' WHERE id = ?`, id); err != nil {
			return nil, err
		}
		if err := recordEvent(ctx, tx, id, store.EventPromoted, store.StatusStored, now); err != nil {
			return nil, err
		}
		promoted = append(promoted, id)
	}
}

// PutForms upserts definitions and capacity settings in one transaction.
func (s *Store) PutForms(ctx context.Context, forms []form.Record) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify("put forms: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var version int64
	if err := tx.QueryRowContext(ctx, `UPDATE meta SET v = v + 1 WHERE k = 'forms_version' RETURNING v`).Scan(&version); err != nil {
		return classify("put forms: version", err)
	}
	now := s.now().UnixMicro()
	for _, f := range forms {
		if _, err := tx.ExecContext(ctx, `INSERT INTO forms(id, site, source, version, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET site = excluded.site, source = excluded.source, version = excluded.version, updated_at = excluded.updated_at`,
			f.ID, f.Site, f.Source, version, now); err != nil {
			return classify("put form "+f.ID, err)
		}
		var limit any
		if f.Capacity != nil {
			limit = *f.Capacity
		}
		whenFull := f.WhenFull
		if whenFull == "" {
			whenFull = "reject"
		}
		uniqueAnswer := f.UniqueAnswer
		if uniqueAnswer == "" {
			uniqueAnswer = form.UniqueAnswerGeneric
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO capacity(form, capacity, when_full, unique_answer, taken) VALUES (?, ?, ?, ?, 0)
			ON CONFLICT(form) DO UPDATE SET capacity = excluded.capacity, when_full = excluded.when_full, unique_answer = excluded.unique_answer`,
			f.ID, limit, whenFull, uniqueAnswer); err != nil {
			return classify("put form "+f.ID+": capacity", err)
		}
		if _, err := promote(ctx, tx, f.ID, s.now()); err != nil {
			return classify("put form "+f.ID+": promote", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return classify("put forms: commit", err)
	}
	return nil
}

// Forms returns the forms changed after version.
func (s *Store) Forms(ctx context.Context, after int64) ([]form.Record, int64, error) {
	var latest int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'forms_version'`).Scan(&latest); err != nil {
		return nil, 0, classify("read forms version", err)
	}
	if latest <= after {
		return nil, latest, nil
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT f.id, f.site, f.source, f.version, f.updated_at, c.capacity, c.when_full
		FROM forms f LEFT JOIN capacity c ON c.form = f.id WHERE f.version > ? ORDER BY f.id`, after)
	if err != nil {
		return nil, 0, classify("read forms", err)
	}
	defer rows.Close()
	var out []form.Record
	for rows.Next() {
		var (
			f        form.Record
			us       int64
			limit    sql.NullInt64
			whenFull sql.NullString
		)
		if err := rows.Scan(&f.ID, &f.Site, &f.Source, &f.Version, &us, &limit, &whenFull); err != nil {
			return nil, 0, classify("read forms", err)
		}
		f.UpdatedAt = time.UnixMicro(us)
		if limit.Valid {
			n := int(limit.Int64)
			f.Capacity = &n
		}
		f.WhenFull = whenFull.String
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, classify("read forms", err)
	}
	return out, latest, nil
}

// Capacities reports places per form.
func (s *Store) Capacities(ctx context.Context) (map[string]store.Capacity, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT c.form, c.capacity, c.taken,
		(SELECT COUNT(*) FROM entries e WHERE e.form = c.form AND e.status = 'waitlisted') FROM capacity c`)
	if err != nil {
		return nil, classify("read capacity", err)
	}
	defer rows.Close()
	out := map[string]store.Capacity{}
	for rows.Next() {
		var (
			form  string
			limit sql.NullInt64
			c     store.Capacity
		)
		if err := rows.Scan(&form, &limit, &c.Taken, &c.Waitlisted); err != nil {
			return nil, classify("read capacity", err)
		}
		if limit.Valid {
			n := int(limit.Int64)
			c.Limit = &n
		}
		out[form] = c
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read capacity", err)
	}
	return out, nil
}

// Export streams a form's entries in arrival order, a page at a time, by
// (seq, id) keyset: entries sharing a seq may straddle two pages.
func (s *Store) Export(ctx context.Context, form string, fn func(store.Row) error) error {
	afterSeq, afterID := int64(-1), ""
	for {
		rows, err := s.rdb.QueryContext(ctx, `SELECT seq, id, key, status, received_at, data FROM entries
			WHERE form = ? AND (seq, id) > (?, ?) ORDER BY seq, id LIMIT ?`, form, afterSeq, afterID, store.ExportPage)
		if err != nil {
			return classify("export", err)
		}
		page, err := scanRows(rows, form)
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

// FindEntries lists entries whose data holds one of the needles.
func (s *Store) FindEntries(ctx context.Context, needles [][]byte, limit int) ([]store.EntryRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	conds := make([]string, len(needles))
	args := make([]any, 0, len(needles)+1)
	for i, n := range needles {
		conds[i] = "instr(data, ?) > 0"
		args = append(args, n)
	}
	args = append(args, limit)
	rows, err := s.rdb.QueryContext(ctx, `SELECT id, site, form, key, seq FROM entries WHERE data IS NOT NULL AND (`+
		strings.Join(conds, " OR ")+`) ORDER BY received_at, id LIMIT ?`, args...)
	if err != nil {
		return nil, classify("find entries", err)
	}
	defer rows.Close()
	var out []store.EntryRef
	for rows.Next() {
		var r store.EntryRef
		if err := rows.Scan(&r.ID, &r.Site, &r.Form, &r.Key, &r.Seq); err != nil {
			return nil, classify("find entries", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("find entries", err)
	}
	return out, nil
}

// microOrNull is t in Unix microseconds, or NULL for the zero time.
func microOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// PutSetting stores value under name unless a value is there, and returns
// the value stored.
func (s *Store) PutSetting(ctx context.Context, name string, value []byte) ([]byte, error) {
	var stored []byte
	err := s.wdb.QueryRowContext(ctx, `INSERT INTO settings(name, value) VALUES (?, ?)
		ON CONFLICT(name) DO UPDATE SET value = settings.value RETURNING value`, name, value).Scan(&stored)
	if err != nil {
		return nil, classify("put setting "+name, err)
	}
	return stored, nil
}

// firstOwnerOfAll is the first account that is an owner of every site
// (accounts.Account.OwnsAll), NULL while there is none.
const firstOwnerOfAll = `(SELECT id FROM accounts WHERE role = 'owner' AND sites = '["*"]' ORDER BY created_at, id LIMIT 1)`

// PutToken stores a token hash under a name.
func (s *Store) PutToken(ctx context.Context, name string, hash []byte, ifAbsent bool) (bool, error) {
	// The token belongs to the first owner of every site, if there is
	// one yet (else that account adopts it when made).
	q := `INSERT INTO tokens(name, hash, created_at, account_id) VALUES (?, ?, ?, ` + firstOwnerOfAll + `)
		ON CONFLICT(name) DO UPDATE SET hash = excluded.hash, created_at = excluded.created_at, used_at = NULL, revoked_at = NULL,
			account_id = coalesce(tokens.account_id, excluded.account_id)`
	if ifAbsent {
		q = `INSERT INTO tokens(name, hash, created_at, account_id) VALUES (?, ?, ?, ` + firstOwnerOfAll + `) ON CONFLICT(name) DO NOTHING`
	}
	res, err := s.wdb.ExecContext(ctx, q, name, hash, s.now().UnixMicro())
	if err != nil {
		return false, classify("put token", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// TokenValid says whether a token with this hash exists, and marks it
// used the first time.
func (s *Store) TokenValid(ctx context.Context, hash []byte) (bool, error) {
	var used sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, `SELECT used_at FROM tokens WHERE hash = ? AND revoked_at IS NULL`, hash).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, classify("check token", err)
	}
	if !used.Valid {
		if _, err := s.wdb.ExecContext(ctx, `UPDATE tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL`, s.now().UnixMicro(), hash); err != nil {
			return false, classify("mark token used", err)
		}
	}
	return true, nil
}
