package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// The accounts of the owner's console (package accounts): every change is
// one transaction, with its audit entry, retried on a deadlock as inTx
// does; uniqueness comes from the unique indexes and guarded statements,
// so instances need no lock of their own.

var _ accounts.Store = (*Store)(nil)

// errRefused rolls back a transaction that found a reason to refuse; the
// reason is returned instead, unclassified (it is not a store failure).
var errRefused = errors.New("refused")

// refusal carries a sentinel of package accounts out of a transaction.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }

func refuse(err error) error { return &refusal{err} }

// accountsTx is inTx for the accounts: a refusal rolls back and comes out
// as the sentinel it carries.
func (s *Store) accountsTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	var refused error
	err := s.inTx(ctx, op, func(tx pgx.Tx) error {
		refused = nil
		err := fn(tx)
		var r *refusal
		if errors.As(err, &r) {
			refused = r.err
			return errRefused
		}
		return err
	})
	if refused != nil {
		return fmt.Errorf("%s: %w", op, refused)
	}
	return err
}

// appendAudit records e, unless it is the zero entry (a change that is not
// worth a line, such as ending a replaced session).
func appendAudit(ctx context.Context, tx pgx.Tx, e accounts.Entry) error {
	if e.Action == "" {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO audit_log(at, actor, action, site, form, target, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		micro(e.At), e.Actor, e.Action, e.Site, e.Form, e.Target, e.Detail)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func sitesArray(sites []string) []string {
	if sites == nil {
		return []string{}
	}
	return sites
}

// scanAccount is store.ScanAccount with the sites as text[].
func scanAccount(r store.Scanner, extra ...any) (accounts.Account, error) {
	return store.ScanAccount(r, func(s *[]string) any { return s }, extra...)
}

// CreateAccount inserts an account; the unique e-mail index decides.
func (s *Store) CreateAccount(ctx context.Context, a accounts.Account, e accounts.Entry) error {
	return s.accountsTx(ctx, "create account", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO accounts(id, email, name, role, sites, password_hash, disabled, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (email) DO NOTHING`,
			a.ID, a.Email, a.Name, string(a.Role), sitesArray(a.Sites), a.PasswordHash, a.Disabled, micro(a.CreatedAt), micro(a.UpdatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return refuse(accounts.ErrEmailTaken)
		}
		if err := adoptAdminToken(ctx, tx, a); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// adoptAdminToken gives the admin token that belongs to no account yet to
// a new owner of every site (accounts.Account.OwnsAll).
func adoptAdminToken(ctx context.Context, tx pgx.Tx, a accounts.Account) error {
	if !a.OwnsAll() {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE tokens SET account_id = $1 WHERE name = 'admin' AND account_id IS NULL`, a.ID); err != nil {
		return fmt.Errorf("give the admin token to %s: %w", a.Email, err)
	}
	return nil
}

func (s *Store) readAccount(ctx context.Context, op, where string, arg any) (accounts.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+store.AccountColumns+` FROM accounts a WHERE `+where, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("%s: %w", op, accounts.ErrNotFound)
	}
	if err != nil {
		return a, classify(op, err)
	}
	return a, nil
}

// AccountByID reads an account.
func (s *Store) AccountByID(ctx context.Context, id string) (accounts.Account, error) {
	return s.readAccount(ctx, "read account", "a.id = $1", id)
}

// AccountByEmail reads an account by its normalized e-mail.
func (s *Store) AccountByEmail(ctx context.Context, email string) (accounts.Account, error) {
	return s.readAccount(ctx, "read account", "a.email = $1", email)
}

// ListAccounts lists every account by e-mail.
func (s *Store) ListAccounts(ctx context.Context) ([]accounts.Account, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.AccountColumns+` FROM accounts a ORDER BY a.email`)
	if err != nil {
		return nil, classify("list accounts", err)
	}
	out, err := collect(rows, func(r store.Scanner) (accounts.Account, error) { return scanAccount(r) })
	if err != nil {
		return nil, classify("list accounts", err)
	}
	return out, nil
}

// UpdateAccount applies a change; disabling ends the sessions in the same
// transaction.
func (s *Store) UpdateAccount(ctx context.Context, id string, c accounts.Change, e accounts.Entry) (accounts.Account, error) {
	args := []any{id, micro(c.At)}
	set := []string{"updated_at = $2"}
	add := func(col string, v any) {
		args = append(args, v)
		set = append(set, fmt.Sprintf("%s = $%d", col, len(args)))
	}
	if c.Name != nil {
		add("name", *c.Name)
	}
	if c.Role != nil {
		add("role", string(*c.Role))
	}
	if c.Sites != nil {
		add("sites", c.Sites)
	}
	if c.PasswordHash != nil {
		add("password_hash", *c.PasswordHash)
	}
	if c.Disabled != nil {
		add("disabled", *c.Disabled)
	}
	var a accounts.Account
	err := s.accountsTx(ctx, "update account", func(tx pgx.Tx) error {
		var err error
		a, err = scanAccount(tx.QueryRow(ctx, `UPDATE accounts a SET `+strings.Join(set, ", ")+` WHERE a.id = $1 RETURNING `+store.AccountColumns, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			return refuse(accounts.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if a.Disabled || c.EndSessions {
			if _, err := endSessions(ctx, tx, id, c.KeepSession); err != nil {
				return fmt.Errorf("end sessions: %w", err)
			}
		}
		return appendAudit(ctx, tx, e)
	})
	return a, err
}

// CreateAPIToken stores a token's hash.
func (s *Store) CreateAPIToken(ctx context.Context, t accounts.Token, hash []byte, e accounts.Entry) error {
	return s.accountsTx(ctx, "create token", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO api_tokens(id, account_id, name, created_by, hash, created_at, scope) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			t.ID, t.AccountID, t.Name, t.CreatedBy, hash, micro(t.CreatedAt), t.Scope); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// APITokenByHash finds a token and its account.
func (s *Store) APITokenByHash(ctx context.Context, hash []byte) (accounts.Token, accounts.Account, error) {
	var t accounts.Token
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+store.AccountColumns+`, `+store.TokenColumns+`
		FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.hash = $1`, hash), store.TokenDest(&t)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Token{}, accounts.Account{}, fmt.Errorf("find token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, accounts.Account{}, classify("find token", err)
	}
	return t, a, nil
}

// APITokenByID reads a token.
func (s *Store) APITokenByID(ctx context.Context, id string) (accounts.Token, error) {
	t, err := store.ScanToken(s.pool.QueryRow(ctx, `SELECT `+store.TokenColumns+` FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("read token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("read token", err)
	}
	return t, nil
}

// ListAPITokens lists tokens newest first.
func (s *Store) ListAPITokens(ctx context.Context, accountID string) ([]accounts.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+store.TokenColumns+` FROM api_tokens t JOIN accounts a ON a.id = t.account_id
		WHERE $1 = '' OR t.account_id = $1 ORDER BY t.created_at DESC, t.id DESC`, accountID)
	if err != nil {
		return nil, classify("list tokens", err)
	}
	out, err := collect(rows, store.ScanToken)
	if err != nil {
		return nil, classify("list tokens", err)
	}
	return out, nil
}

// TouchAPIToken records a token's use, at most once per notAfter step.
func (s *Store) TouchAPIToken(ctx context.Context, id string, at, notAfter time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
		id, micro(at), micro(notAfter)); err != nil {
		return classify("record token use", err)
	}
	return nil
}

// RevokeAPIToken marks a live token revoked.
func (s *Store) RevokeAPIToken(ctx context.Context, id string, at time.Time, e accounts.Entry) error {
	return s.accountsTx(ctx, "revoke token", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, id, micro(at))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = $1)`, id).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return refuse(accounts.ErrRevoked)
			}
			return refuse(accounts.ErrNotFound)
		}
		return appendAudit(ctx, tx, e)
	})
}

// AdminTokenByHash finds the admin token and marks it used the first time.
func (s *Store) AdminTokenByHash(ctx context.Context, hash []byte) (accounts.Token, error) {
	t, err := store.ScanAdminToken(s.pool.QueryRow(ctx, `SELECT `+store.AdminTokenColumns+` FROM tokens WHERE name = 'admin' AND hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("find admin token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("find admin token", err)
	}
	if t.LastUsedAt.IsZero() {
		now := micro(s.now())
		if _, err := s.pool.Exec(ctx, `UPDATE tokens SET used_at = $1 WHERE hash = $2 AND used_at IS NULL`, now, hash); err != nil {
			return accounts.Token{}, classify("mark admin token used", err)
		}
		t.LastUsedAt = now
	}
	return t, nil
}

// AdminToken reads the admin token.
func (s *Store) AdminToken(ctx context.Context) (accounts.Token, error) {
	t, err := store.ScanAdminToken(s.pool.QueryRow(ctx, `SELECT `+store.AdminTokenColumns+` FROM tokens WHERE name = 'admin'`))
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("read admin token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("read admin token", err)
	}
	return t, nil
}

// RevokeAdminToken marks the admin token revoked; the row's lock orders
// concurrent revocations.
func (s *Store) RevokeAdminToken(ctx context.Context, at time.Time, e accounts.Entry) error {
	return s.accountsTx(ctx, "revoke admin token", func(tx pgx.Tx) error {
		var revoked *time.Time
		err := tx.QueryRow(ctx, `SELECT revoked_at FROM tokens WHERE name = 'admin' FOR UPDATE`).Scan(&revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return refuse(accounts.ErrNotFound)
		case err != nil:
			return err
		case revoked != nil:
			return refuse(accounts.ErrRevoked)
		}
		if _, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = $1 WHERE name = 'admin'`, micro(at)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// CreateSession stores a session.
func (s *Store) CreateSession(ctx context.Context, ss accounts.Session, e accounts.Entry) error {
	return s.accountsTx(ctx, "create session", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sessions(hash, account_id, csrf, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			ss.Hash, ss.AccountID, ss.CSRF, micro(ss.CreatedAt), micro(ss.LastSeenAt), micro(ss.ExpiresAt)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// SessionByHash finds a session and its account.
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (accounts.Session, accounts.Account, error) {
	ss := accounts.Session{Hash: hash}
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+store.AccountColumns+`, s.account_id, s.csrf, s.created_at, s.last_seen_at, s.expires_at
		FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.hash = $1`, hash),
		&ss.AccountID, &ss.CSRF, store.TimeDest(&ss.CreatedAt), store.TimeDest(&ss.LastSeenAt), store.TimeDest(&ss.ExpiresAt))
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Session{}, accounts.Account{}, fmt.Errorf("find session: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Session{}, accounts.Account{}, classify("find session", err)
	}
	return ss, a, nil
}

// TouchSession records a session's use and moves its expiry.
func (s *Store) TouchSession(ctx context.Context, hash []byte, lastSeen, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen_at = $2, expires_at = $3 WHERE hash = $1`,
		hash, micro(lastSeen), micro(expires)); err != nil {
		return classify("record session use", err)
	}
	return nil
}

// DeleteSession ends a session; the entry is recorded only if there was
// one to end.
func (s *Store) DeleteSession(ctx context.Context, hash []byte, e accounts.Entry) error {
	return s.accountsTx(ctx, "end session", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE hash = $1`, hash)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// EndSessions ends an account's sessions but keep.
func (s *Store) EndSessions(ctx context.Context, accountID string, keep []byte, e accounts.Entry) (int, error) {
	var n int64
	err := s.accountsTx(ctx, "end sessions", func(tx pgx.Tx) error {
		var err error
		if n, err = endSessions(ctx, tx, accountID, keep); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
	return int(n), err
}

// endSessions deletes an account's sessions but keep (nil: all).
func endSessions(ctx context.Context, tx pgx.Tx, accountID string, keep []byte) (int64, error) {
	q, args := `DELETE FROM sessions WHERE account_id = $1`, []any{accountID}
	if keep != nil {
		q, args = q+` AND hash <> $2`, append(args, keep)
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// AddLoginAttempt counts an attempt against each key, one upsert each; the
// key's row lock orders concurrent attempts, and the SET expressions read
// the row as it was, so prev_at becomes the attempt before this one.
func (s *Store) AddLoginAttempt(ctx context.Context, keys []string, at, quietSince time.Time) ([]accounts.Attempts, error) {
	out := make([]accounts.Attempts, len(keys))
	err := s.accountsTx(ctx, "count sign-in attempt", func(tx pgx.Tx) error {
		for i, k := range keys {
			out[i].Key = k
			var prev *time.Time
			if err := tx.QueryRow(ctx, `INSERT INTO login_attempts AS l(key, attempts, since, last_at, prev_at) VALUES ($1, 1, $2, $2, NULL)
				ON CONFLICT (key) DO UPDATE SET
					attempts = CASE WHEN l.last_at <= $3 THEN 1 ELSE l.attempts + 1 END,
					since = CASE WHEN l.last_at <= $3 THEN excluded.since ELSE l.since END,
					prev_at = CASE WHEN l.last_at <= $3 THEN NULL ELSE l.last_at END,
					last_at = excluded.last_at
				RETURNING attempts, since, prev_at`, k, micro(at), micro(quietSince)).Scan(&out[i].Count, &out[i].Since, &prev); err != nil {
				return err
			}
			out[i].Prev = fromNullTime(prev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LoginSucceeded forgets the keys' attempts and stores a new hash.
func (s *Store) LoginSucceeded(ctx context.Context, keys []string, accountID, rehash string, e accounts.Entry) error {
	return s.accountsTx(ctx, "record sign-in", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM login_attempts WHERE key = ANY($1)`, keys); err != nil {
			return err
		}
		if rehash != "" {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET password_hash = $2 WHERE id = $1`, accountID, rehash); err != nil {
				return err
			}
		}
		return appendAudit(ctx, tx, e)
	})
}

// PruneAccounts deletes expired sessions, setup codes and attempt windows.
func (s *Store) PruneAccounts(ctx context.Context, now, attemptsBefore time.Time) (int, error) {
	var n int
	err := s.accountsTx(ctx, "prune sessions", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH s AS (DELETE FROM sessions WHERE expires_at <= $1 RETURNING 1),
				c AS (DELETE FROM setup_codes WHERE expires_at <= $1 RETURNING 1),
				r AS (DELETE FROM password_resets WHERE expires_at <= $1 RETURNING 1),
				l AS (DELETE FROM login_attempts WHERE last_at < $2 RETURNING 1)
			SELECT (SELECT count(*) FROM s) + (SELECT count(*) FROM c) + (SELECT count(*) FROM r) + (SELECT count(*) FROM l)`,
			micro(now), micro(attemptsBefore)).Scan(&n)
	})
	return n, err
}

// PutSetupCode stores the setup code while no account exists, and
// removes it once one does; unless replace, a live code stays. The row's
// lock orders instances starting together.
func (s *Store) PutSetupCode(ctx context.Context, hash []byte, at, expires time.Time, replace bool) (bool, error) {
	var put bool
	err := s.accountsTx(ctx, "put setup code", func(tx pgx.Tx) error {
		q := `INSERT INTO setup_codes(one, hash, expires_at) SELECT 1, $1, $2 WHERE NOT EXISTS (SELECT 1 FROM accounts)
			ON CONFLICT (one) DO UPDATE SET hash = excluded.hash, expires_at = excluded.expires_at`
		args := []any{hash, micro(expires)}
		if !replace {
			q += ` WHERE setup_codes.expires_at <= $3`
			args = append(args, micro(at))
		}
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		put = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `DELETE FROM setup_codes WHERE EXISTS (SELECT 1 FROM accounts)`)
		return err
	})
	return put, err
}

// SetupCodeHash is the live setup code's hash.
func (s *Store) SetupCodeHash(ctx context.Context, at time.Time) ([]byte, error) {
	var done bool
	var hash []byte
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts),
		(SELECT hash FROM setup_codes WHERE expires_at > $1)`, micro(at)).Scan(&done, &hash)
	switch {
	case err != nil:
		return nil, classify("read setup code", err)
	case done:
		return nil, fmt.Errorf("read setup code: %w", accounts.ErrSetupDone)
	case hash == nil:
		return nil, fmt.Errorf("read setup code: %w", accounts.ErrSetupCode)
	}
	return hash, nil
}

// UseSetupCode burns the code and creates the first account, together. A
// concurrent use waits for the code row's lock and then finds it gone.
func (s *Store) UseSetupCode(ctx context.Context, hash []byte, at time.Time, a accounts.Account, e accounts.Entry) error {
	return s.accountsTx(ctx, "use setup code", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM setup_codes WHERE hash = $1 AND expires_at > $2`, hash, micro(at))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return refuse(accounts.ErrSetupCode)
		}
		tag, err = tx.Exec(ctx, `INSERT INTO accounts(id, email, name, role, sites, password_hash, disabled, created_at, updated_at)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM accounts)`,
			a.ID, a.Email, a.Name, string(a.Role), sitesArray(a.Sites), a.PasswordHash, a.Disabled, micro(a.CreatedAt), micro(a.UpdatedAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return refuse(accounts.ErrSetupDone)
		}
		if err := adoptAdminToken(ctx, tx, a); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// CreatePasswordReset stores a reset link's hash.
func (s *Store) CreatePasswordReset(ctx context.Context, hash []byte, accountID string, at, expires time.Time, e accounts.Entry) error {
	return s.accountsTx(ctx, "create reset link", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO password_resets(hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
			hash, accountID, micro(at), micro(expires)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// PasswordResetAccount is the account of a live reset link.
func (s *Store) PasswordResetAccount(ctx context.Context, hash []byte, at time.Time) (accounts.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+store.AccountColumns+` FROM password_resets r JOIN accounts a ON a.id = r.account_id
		WHERE r.hash = $1 AND r.expires_at > $2`, hash, micro(at)))
	if errors.Is(err, pgx.ErrNoRows) {
		return accounts.Account{}, fmt.Errorf("read reset link: %w", accounts.ErrResetInvalid)
	}
	if err != nil {
		return accounts.Account{}, classify("read reset link", err)
	}
	return a, nil
}

// UsePasswordReset burns the link, sets the password and ends the
// sessions, together; a concurrent use waits for the link's row lock and
// then finds it gone.
func (s *Store) UsePasswordReset(ctx context.Context, hash []byte, accountID string, at time.Time, passwordHash string, e accounts.Entry) error {
	return s.accountsTx(ctx, "use reset link", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM password_resets WHERE hash = $1 AND account_id = $2 AND expires_at > $3`, hash, accountID, micro(at))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return refuse(accounts.ErrResetInvalid)
		}
		for _, q := range []string{
			`DELETE FROM password_resets WHERE account_id = $1`,
			`DELETE FROM sessions WHERE account_id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, accountID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET password_hash = $2, updated_at = $3 WHERE id = $1`, accountID, passwordHash, micro(at)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// AppendAudit records an entry.
func (s *Store) AppendAudit(ctx context.Context, e accounts.Entry) error {
	return s.accountsTx(ctx, "record audit entry", func(tx pgx.Tx) error { return appendAudit(ctx, tx, e) })
}

// ListAudit lists entries newest first, keyset-paged by id.
func (s *Store) ListAudit(ctx context.Context, f accounts.AuditFilter) ([]accounts.Entry, error) {
	if f.Sites != nil && len(f.Sites) == 0 {
		return nil, nil
	}
	limit := f.Limit
	if limit <= 0 {
		limit = accounts.DefaultAuditLimit
	}
	var (
		where []string
		args  []any
	)
	cond := func(c string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(c, len(args)))
	}
	if f.Before > 0 {
		cond("id < $%d", f.Before)
	}
	if f.Sites != nil {
		cond("site = ANY($%d)", f.Sites)
	}
	if f.Form != "" {
		cond("form = $%d", f.Form)
	}
	q := `SELECT id, at, actor, action, site, form, target, detail FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit)
	rows, err := s.pool.Query(ctx, q+fmt.Sprintf(" ORDER BY id DESC LIMIT $%d", len(args)), args...)
	if err != nil {
		return nil, classify("read audit log", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (accounts.Entry, error) {
		var e accounts.Entry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Site, &e.Form, &e.Target, &e.Detail)
		return e, err
	})
	if err != nil {
		return nil, classify("read audit log", err)
	}
	return out, nil
}
