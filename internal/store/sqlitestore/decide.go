package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

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
	// What a decision checks that intake used to (issue 28): the
	// solution's spend and the prune of spent ones, the spam reason, the
	// claim of an upload named with its field.
	spend, prune, spamReason, claimUpload *sql.Stmt
	// Options with places, and review (places.go, review.go).
	option, takeOption, untake, setPlace, optionFull *sql.Stmt
	// consumeDraft deletes the draft saved under the key (drafts.go).
	consumeDraft *sql.Stmt
}

func prepare(ctx context.Context, db *sql.DB) (*stmts, error) {
	var st stmts
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&st.insert, `INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data, linked)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT(form, key) DO NOTHING`},
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
		{&st.spend, spendSQL},
		{&st.prune, pruneSQL},
		{&st.spamReason, `INSERT INTO spam_reasons(form, key, reason, noted_at) VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT(form, key) DO UPDATE SET reason = excluded.reason, noted_at = excluded.noted_at`},
		{&st.claimUpload, claimUploadSQL},
		{&st.option, optionOfEntry},
		{&st.takeOption, takeOptionPlace},
		{&st.untake, `UPDATE capacity SET taken = taken - 1 WHERE form = ?`},
		{&st.setPlace, `UPDATE entries SET place = ? WHERE id = ?`},
		{&st.optionFull, optionFullGeneric},
		{&st.consumeDraft, `DELETE FROM drafts WHERE form = ? AND key = ?`},
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
		spend: tx.StmtContext(ctx, st.spend), prune: tx.StmtContext(ctx, st.prune), spamReason: tx.StmtContext(ctx, st.spamReason),
		claimUpload: tx.StmtContext(ctx, st.claimUpload),
		option:      tx.StmtContext(ctx, st.option), takeOption: tx.StmtContext(ctx, st.takeOption),
		untake: tx.StmtContext(ctx, st.untake), setPlace: tx.StmtContext(ctx, st.setPlace),
		optionFull: tx.StmtContext(ctx, st.optionFull), consumeDraft: tx.StmtContext(ctx, st.consumeDraft),
	}
}

func (st *stmts) close() {
	for _, s := range []*sql.Stmt{st.insert, st.claim, st.release, st.take, st.whenFull, st.fullGeneric, st.setStatus, st.holder, st.sameAs, st.event,
		st.spend, st.prune, st.spamReason, st.claimUpload,
		st.option, st.takeOption, st.untake, st.setPlace, st.optionFull, st.consumeDraft} {
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

var _ store.TxApplier = (*Store)(nil)

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
	spent := false
	for i := range subs {
		spent = spent || subs[i].Challenge != nil
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
	if spent && s.prune.due(now) {
		// The spent solutions whose challenges expired go, a bounded few
		// at a time (challengePrune).
		res, err := st.prune.ExecContext(ctx, time.UnixMicro(now).Add(-store.ChallengeGrace).UnixMicro(), store.ChallengePrune)
		if err != nil {
			return nil, classify("apply: prune spent challenges", err)
		}
		n, _ := res.RowsAffected()
		s.prune.done(now, n >= store.ChallengePrune)
	}
	return out, nil
}

// challengePrune paces the prune of expired spent solutions in the
// decisions: it was a statement in every batch that spent one, a few
// per cent of a proof-of-work submission's cost (BENCHMARKS §11) for a
// table that has rows to prune only as challenges expire. Now a batch
// prunes when the last prune is a second old, or when the last one
// deleted a full bound (a backlog: the next batch goes on). An expired
// row kept a little longer changes no answer: the verifier refuses an
// expired solution before its spend, and a row still there only makes a
// spend of it a replay.
type challengePrune struct {
	mu   sync.Mutex
	next int64 // unix µs of the store's clock; 0: now
}

// pruneEvery is how often the decisions prune when there is no backlog.
const pruneEvery = time.Second

func (p *challengePrune) due(now int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return now >= p.next
}

func (p *challengePrune) done(now int64, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if full {
		p.next = 0
	} else {
		p.next = now + pruneEvery.Microseconds()
	}
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
		ReceivedAt: sub.ReceivedAt, Fingerprint: sub.Fingerprint, Linked: true}
	// The key's draft, if one was saved, is consumed by its decision,
	// whatever the decision is.
	if _, err := st.consumeDraft.ExecContext(ctx, sub.Form, sub.Key); err != nil {
		return o, fmt.Errorf("consume the draft: %w", err)
	}
	// uploads: the entry's files are claimed before anything else is decided.
	refused, detail, err := claimUploads(ctx, tx, st, sub)
	if err != nil {
		return o, err
	}
	if refused != "" {
		return s.settleDetail(ctx, tx, st, o, refused, detail)
	}
	spam := sub.SpamReason
	if c := sub.Challenge; c != nil {
		spent, err := spend(ctx, st.spend, store.ChallengeUse{Signature: c.Signature, Form: sub.Form, Key: sub.Key, Expires: c.Expires}, time.UnixMicro(now))
		if err != nil {
			return o, err
		}
		switch {
		case spent:
		case c.Refuse:
			if _, err := tx.ExecContext(ctx, `DELETE FROM upload_claims WHERE entry_id = ?`, sub.ID); err != nil {
				return o, fmt.Errorf("give back upload claims: %w", err)
			}
			return s.settle(ctx, st, o, store.StatusChallengeInvalid, false)
		default:
			spam = store.SpamChallengeReplayed
			if !sub.Spam {
				if o, err = s.settle(ctx, st, o, store.StatusSpam, false); err != nil {
					return o, err
				}
			}
		}
	}
	if spam != "" {
		if _, err := st.spamReason.ExecContext(ctx, sub.Form, sub.Key, spam, now); err != nil {
			return o, fmt.Errorf("note the spam reason: %w", err)
		}
	}
	if o.Status == store.StatusSpam {
		return o, nil
	}
	return s.place(ctx, st, o, sub.Claims)
}

// settleDetail settles a just-inserted entry refused for what detail
// names (store.Outcome.Detail).
func (s *Store) settleDetail(ctx context.Context, tx *sql.Tx, st *stmts, o store.Outcome, status, detail string) (store.Outcome, error) {
	if _, err := tx.ExecContext(ctx, `UPDATE entries SET detail = ? WHERE id = ?`, detail, o.ID); err != nil {
		return o, fmt.Errorf("record the refusal's detail: %w", err)
	}
	o.Detail = detail
	return s.settle(ctx, st, o, status, false)
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
				// The same for the full option it chose (places.go).
				if option, err := fullOptionGeneric(ctx, st, o.Form, o.ID); err != nil || option != "" {
					if err != nil {
						return o, err
					}
					o.FullOption = option
					return s.settle(ctx, st, o, store.StatusRejected, true)
				}
			}
			return s.settle(ctx, st, o, store.StatusDuplicate, true)
		}
	}
	took, option, optionFull, review, err := takePlace(ctx, st, o.Form, o.ID)
	if err != nil {
		return o, err
	}
	if took {
		if err := markPlace(ctx, st, option, o.ID); err != nil {
			return o, err
		}
		if review {
			return s.settle(ctx, st, o, store.StatusPending, false)
		}
		return o, nil
	}
	var whenFull string
	switch err := st.whenFull.QueryRowContext(ctx, o.Form).Scan(&whenFull); {
	case errors.Is(err, sql.ErrNoRows):
		return o, nil // a form the store has no settings for has no limit
	case err != nil:
		return o, fmt.Errorf("read when_full: %w", err)
	case whenFull == "waitlist":
		// It waits for its option's place as well as the form's.
		if err := markPlace(ctx, st, option, o.ID); err != nil {
			return o, err
		}
		return s.settle(ctx, st, o, store.StatusWaitlisted, false)
	default:
		if optionFull {
			// The answer names the full option: the entry keeps it.
			if err := markPlace(ctx, st, option, o.ID); err != nil {
				return o, err
			}
			o.FullOption = option
		}
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
		detail        sql.NullString
	)
	var full sql.NullString
	err := q.QueryRowContext(ctx, `SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, e.detail, o.id, o.key, o.decision, o.received_at,
		CASE WHEN e.decision = 'rejected' THEN e.place END, e.linked
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = ? AND e.key = ?`, form, key).
		Scan(&o.ID, &o.Decision, &status, &us, &fp, &detail, &sameID, &sameK, &sameD, &sameAt, &full, &o.Linked)
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	o.Form, o.Key, o.Status, o.Detail, o.FullOption = form, key, status, detail.String, full.String
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
