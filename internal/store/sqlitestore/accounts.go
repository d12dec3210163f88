package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store"
)

// The accounts of the owner's console (package accounts): every change is
// one transaction on the write connection, with its audit entry; reads go
// to the read pool.

var _ accounts.Store = (*Store)(nil)

type auditExecer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
}

// appendAudit records e, unless it is the zero entry (a change that is not
// worth a line, such as ending a replaced session).
func appendAudit(ctx context.Context, x auditExecer, e accounts.Entry) error {
	if e.Action == "" {
		return nil
	}
	_, err := x.ExecContext(ctx, `INSERT INTO audit_log(at, actor, action, site, form, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.At.UnixMicro(), e.Actor, e.Action, e.Site, e.Form, e.Target, e.Detail)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// accountsTx runs fn in a transaction of the write connection and classifies
// the error; errors of package accounts pass through as they are.
func (s *Store) accountsTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return classify(op+": begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		var sentinel *refusal
		if errors.As(err, &sentinel) {
			return fmt.Errorf("%s: %w", op, sentinel.err)
		}
		return classify(op, err)
	}
	if err := tx.Commit(); err != nil {
		return classify(op+": commit", err)
	}
	return nil
}

// refusal carries a sentinel of package accounts out of inTx
// without being classified as a database failure.
type refusal struct{ err error }

func (e *refusal) Error() string { return e.err.Error() }

func refuse(err error) error { return &refusal{err} }

// scanAccount is store.ScanAccount with the sites as JSON text.
func scanAccount(r store.Scanner, extra ...any) (accounts.Account, error) {
	return store.ScanAccount(r, func(s *[]string) any { return sitesDest{s} }, extra...)
}

// sitesDest decodes an account's sites from their JSON text.
type sitesDest struct{ sites *[]string }

func (d sitesDest) Scan(v any) error {
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("scan %T into sites", v)
	}
	if err := json.Unmarshal(b, d.sites); err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	return nil
}

func sitesJSON(sites []string) string {
	if sites == nil {
		sites = []string{}
	}
	b, _ := json.Marshal(sites)
	return string(b)
}

// CreateAccount inserts an account; the unique e-mail index decides.
func (s *Store) CreateAccount(ctx context.Context, a accounts.Account, e accounts.Entry) error {
	return s.accountsTx(ctx, "create account", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO accounts(id, email, name, role, sites, password_hash, disabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(email) DO NOTHING`,
			a.ID, a.Email, a.Name, string(a.Role), sitesJSON(a.Sites), a.PasswordHash, a.Disabled, micro(a.CreatedAt), micro(a.UpdatedAt))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
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
func adoptAdminToken(ctx context.Context, tx *sql.Tx, a accounts.Account) error {
	if !a.OwnsAll() {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tokens SET account_id = ? WHERE name = 'admin' AND account_id IS NULL`, a.ID); err != nil {
		return fmt.Errorf("give the admin token to %s: %w", a.Email, err)
	}
	return nil
}

func (s *Store) readAccount(ctx context.Context, op, where string, arg any) (accounts.Account, error) {
	a, err := scanAccount(s.rdb.QueryRowContext(ctx, `SELECT `+store.AccountColumns+` FROM accounts a WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%s: %w", op, accounts.ErrNotFound)
	}
	if err != nil {
		return a, classify(op, err)
	}
	return a, nil
}

// AccountByID reads an account.
func (s *Store) AccountByID(ctx context.Context, id string) (accounts.Account, error) {
	return s.readAccount(ctx, "read account", "a.id = ?", id)
}

// AccountByEmail reads an account by its normalized e-mail.
func (s *Store) AccountByEmail(ctx context.Context, email string) (accounts.Account, error) {
	return s.readAccount(ctx, "read account", "a.email = ?", email)
}

// ListAccounts lists every account by e-mail.
func (s *Store) ListAccounts(ctx context.Context) ([]accounts.Account, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.AccountColumns+` FROM accounts a ORDER BY a.email`)
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
	set := []string{"updated_at = ?"}
	args := []any{micro(c.At)}
	if c.Name != nil {
		set, args = append(set, "name = ?"), append(args, *c.Name)
	}
	if c.Role != nil {
		set, args = append(set, "role = ?"), append(args, string(*c.Role))
	}
	if c.Sites != nil {
		set, args = append(set, "sites = ?"), append(args, sitesJSON(c.Sites))
	}
	if c.PasswordHash != nil {
		set, args = append(set, "password_hash = ?"), append(args, *c.PasswordHash)
	}
	if c.Disabled != nil {
		set, args = append(set, "disabled = ?"), append(args, *c.Disabled)
	}
	var a accounts.Account
	err := s.accountsTx(ctx, "update account", func(tx *sql.Tx) error {
		var err error
		a, err = scanAccount(tx.QueryRowContext(ctx, `UPDATE accounts SET `+strings.Join(set, ", ")+` WHERE id = ? RETURNING `+strings.ReplaceAll(store.AccountColumns, "a.", ""),
			append(args, id)...))
		if errors.Is(err, sql.ErrNoRows) {
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
	return s.accountsTx(ctx, "create token", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO api_tokens(id, account_id, name, created_by, hash, created_at, scope) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.AccountID, t.Name, t.CreatedBy, hash, micro(t.CreatedAt), t.Scope); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// APITokenByHash finds a token and its account.
func (s *Store) APITokenByHash(ctx context.Context, hash []byte) (accounts.Token, accounts.Account, error) {
	var t accounts.Token
	a, err := scanAccount(s.rdb.QueryRowContext(ctx, `SELECT `+store.AccountColumns+`, `+store.TokenColumns+`
		FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.hash = ?`, hash), store.TokenDest(&t)...)
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Token{}, accounts.Account{}, fmt.Errorf("find token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, accounts.Account{}, classify("find token", err)
	}
	return t, a, nil
}

// APITokenByID reads a token.
func (s *Store) APITokenByID(ctx context.Context, id string) (accounts.Token, error) {
	t, err := store.ScanToken(s.rdb.QueryRowContext(ctx, `SELECT `+store.TokenColumns+` FROM api_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("read token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("read token", err)
	}
	return t, nil
}

// ListAPITokens lists tokens newest first.
func (s *Store) ListAPITokens(ctx context.Context, accountID string) ([]accounts.Token, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.TokenColumns+` FROM api_tokens t JOIN accounts a ON a.id = t.account_id
		WHERE ? = '' OR t.account_id = ? ORDER BY t.created_at DESC, t.id DESC`, accountID, accountID)
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
	if _, err := s.wdb.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		micro(at), id, micro(notAfter)); err != nil {
		return classify("record token use", err)
	}
	return nil
}

// RevokeAPIToken marks a live token revoked.
func (s *Store) RevokeAPIToken(ctx context.Context, id string, at time.Time, e accounts.Entry) error {
	return s.accountsTx(ctx, "revoke token", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, micro(at), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM api_tokens WHERE id = ?`, id).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return refuse(accounts.ErrNotFound)
			}
			if err != nil {
				return err
			}
			return refuse(accounts.ErrRevoked)
		}
		return appendAudit(ctx, tx, e)
	})
}

// AdminTokenByHash finds the admin token and marks it used the first time.
func (s *Store) AdminTokenByHash(ctx context.Context, hash []byte) (accounts.Token, error) {
	t, err := store.ScanAdminToken(s.rdb.QueryRowContext(ctx, `SELECT `+store.AdminTokenColumns+` FROM tokens WHERE name = 'admin' AND hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("find admin token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("find admin token", err)
	}
	if t.LastUsedAt.IsZero() {
		now := s.now().UnixMicro()
		if _, err := s.wdb.ExecContext(ctx, `UPDATE tokens SET used_at = ? WHERE hash = ? AND used_at IS NULL`, now, hash); err != nil {
			return accounts.Token{}, classify("mark admin token used", err)
		}
		t.LastUsedAt = time.UnixMicro(now)
	}
	return t, nil
}

// AdminToken reads the admin token.
func (s *Store) AdminToken(ctx context.Context) (accounts.Token, error) {
	t, err := store.ScanAdminToken(s.rdb.QueryRowContext(ctx, `SELECT `+store.AdminTokenColumns+` FROM tokens WHERE name = 'admin'`))
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Token{}, fmt.Errorf("read admin token: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Token{}, classify("read admin token", err)
	}
	return t, nil
}

// RevokeAdminToken marks the admin token revoked.
func (s *Store) RevokeAdminToken(ctx context.Context, at time.Time, e accounts.Entry) error {
	return s.accountsTx(ctx, "revoke admin token", func(tx *sql.Tx) error {
		var revoked sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM tokens WHERE name = 'admin'`).Scan(&revoked)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return refuse(accounts.ErrNotFound)
		case err != nil:
			return err
		case revoked.Valid:
			return refuse(accounts.ErrRevoked)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE name = 'admin'`, micro(at)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// CreateSession stores a session.
func (s *Store) CreateSession(ctx context.Context, ss accounts.Session, e accounts.Entry) error {
	return s.accountsTx(ctx, "create session", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions(hash, account_id, csrf, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			ss.Hash, ss.AccountID, ss.CSRF, micro(ss.CreatedAt), micro(ss.LastSeenAt), micro(ss.ExpiresAt)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// SessionByHash finds a session and its account.
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (accounts.Session, accounts.Account, error) {
	ss := accounts.Session{Hash: hash}
	a, err := scanAccount(s.rdb.QueryRowContext(ctx, `SELECT `+store.AccountColumns+`, s.account_id, s.csrf, s.created_at, s.last_seen_at, s.expires_at
		FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.hash = ?`, hash),
		&ss.AccountID, &ss.CSRF, store.TimeDest(&ss.CreatedAt), store.TimeDest(&ss.LastSeenAt), store.TimeDest(&ss.ExpiresAt))
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Session{}, accounts.Account{}, fmt.Errorf("find session: %w", accounts.ErrNotFound)
	}
	if err != nil {
		return accounts.Session{}, accounts.Account{}, classify("find session", err)
	}
	return ss, a, nil
}

// TouchSession records a session's use and moves its expiry.
func (s *Store) TouchSession(ctx context.Context, hash []byte, lastSeen, expires time.Time) error {
	if _, err := s.wdb.ExecContext(ctx, `UPDATE sessions SET last_seen_at = ?, expires_at = ? WHERE hash = ?`,
		micro(lastSeen), micro(expires), hash); err != nil {
		return classify("record session use", err)
	}
	return nil
}

// DeleteSession ends a session; the entry is recorded only if there was
// one to end.
func (s *Store) DeleteSession(ctx context.Context, hash []byte, e accounts.Entry) error {
	return s.accountsTx(ctx, "end session", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE hash = ?`, hash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		return appendAudit(ctx, tx, e)
	})
}

// EndSessions ends an account's sessions but keep.
func (s *Store) EndSessions(ctx context.Context, accountID string, keep []byte, e accounts.Entry) (int, error) {
	var n int64
	err := s.accountsTx(ctx, "end sessions", func(tx *sql.Tx) error {
		var err error
		if n, err = endSessions(ctx, tx, accountID, keep); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
	return int(n), err
}

// endSessions deletes an account's sessions but keep (nil: all).
func endSessions(ctx context.Context, tx *sql.Tx, accountID string, keep []byte) (int64, error) {
	q, args := `DELETE FROM sessions WHERE account_id = ?`, []any{accountID}
	if keep != nil {
		q, args = q+` AND hash <> ?`, append(args, keep)
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// AddLoginAttempt counts an attempt against each key, one upsert each.
// The SET expressions read the row as it was, so prev_at becomes the
// attempt before this one.
func (s *Store) AddLoginAttempt(ctx context.Context, keys []string, at, quietSince time.Time) ([]accounts.Attempts, error) {
	out := make([]accounts.Attempts, len(keys))
	err := s.accountsTx(ctx, "count sign-in attempt", func(tx *sql.Tx) error {
		for i, k := range keys {
			var since, prev int64
			err := tx.QueryRowContext(ctx, `INSERT INTO login_attempts(key, attempts, since, last_at, prev_at) VALUES (?, 1, ?, ?, 0)
				ON CONFLICT(key) DO UPDATE SET
					attempts = CASE WHEN last_at <= ? THEN 1 ELSE attempts + 1 END,
					since = CASE WHEN last_at <= ? THEN excluded.since ELSE since END,
					prev_at = CASE WHEN last_at <= ? THEN 0 ELSE last_at END,
					last_at = excluded.last_at
				RETURNING attempts, since, prev_at`, k, micro(at), micro(at), micro(quietSince), micro(quietSince), micro(quietSince)).Scan(&out[i].Count, &since, &prev)
			if err != nil {
				return err
			}
			out[i].Key, out[i].Since = k, time.UnixMicro(since)
			if prev != 0 {
				out[i].Prev = time.UnixMicro(prev)
			}
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
	return s.accountsTx(ctx, "record sign-in", func(tx *sql.Tx) error {
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `DELETE FROM login_attempts WHERE key = ?`, k); err != nil {
				return err
			}
		}
		if rehash != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET password_hash = ? WHERE id = ?`, rehash, accountID); err != nil {
				return err
			}
		}
		return appendAudit(ctx, tx, e)
	})
}

// PruneAccounts deletes expired sessions, setup codes and attempt windows.
func (s *Store) PruneAccounts(ctx context.Context, now, attemptsBefore time.Time) (int, error) {
	total := 0
	err := s.accountsTx(ctx, "prune sessions", func(tx *sql.Tx) error {
		total = 0
		for _, q := range []struct {
			sql string
			arg int64
		}{
			{`DELETE FROM sessions WHERE expires_at <= ?`, micro(now)},
			{`DELETE FROM setup_codes WHERE expires_at <= ?`, micro(now)},
			{`DELETE FROM password_resets WHERE expires_at <= ?`, micro(now)},
			{`DELETE FROM login_attempts WHERE last_at < ?`, micro(attemptsBefore)},
		} {
			res, err := tx.ExecContext(ctx, q.sql, q.arg)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			total += int(n)
		}
		return nil
	})
	return total, err
}

// PutSetupCode stores the setup code while no account exists, and
// removes it once one does; unless replace, a live code stays.
func (s *Store) PutSetupCode(ctx context.Context, hash []byte, at, expires time.Time, replace bool) (bool, error) {
	var put bool
	err := s.accountsTx(ctx, "put setup code", func(tx *sql.Tx) error {
		q := `INSERT INTO setup_codes(one, hash, expires_at) SELECT 1, ?, ? WHERE NOT EXISTS (SELECT 1 FROM accounts)
			ON CONFLICT(one) DO UPDATE SET hash = excluded.hash, expires_at = excluded.expires_at`
		args := []any{hash, micro(expires)}
		if !replace {
			q += ` WHERE setup_codes.expires_at <= ?`
			args = append(args, micro(at))
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		put = n == 1
		_, err = tx.ExecContext(ctx, `DELETE FROM setup_codes WHERE EXISTS (SELECT 1 FROM accounts)`)
		return err
	})
	return put, err
}

// SetupCodeHash is the live setup code's hash.
func (s *Store) SetupCodeHash(ctx context.Context, at time.Time) ([]byte, error) {
	var done bool
	var hash []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM accounts),
		(SELECT hash FROM setup_codes WHERE expires_at > ?)`, micro(at)).Scan(&done, &hash)
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

// UseSetupCode burns the code and creates the first account, together.
func (s *Store) UseSetupCode(ctx context.Context, hash []byte, at time.Time, a accounts.Account, e accounts.Entry) error {
	return s.accountsTx(ctx, "use setup code", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM setup_codes WHERE hash = ? AND expires_at > ?`, hash, micro(at))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return refuse(accounts.ErrSetupCode)
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO accounts(id, email, name, role, sites, password_hash, disabled, created_at, updated_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM accounts)`,
			a.ID, a.Email, a.Name, string(a.Role), sitesJSON(a.Sites), a.PasswordHash, a.Disabled, micro(a.CreatedAt), micro(a.UpdatedAt))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
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
	return s.accountsTx(ctx, "create reset link", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO password_resets(hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			hash, accountID, micro(at), micro(expires)); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// PasswordResetAccount is the account of a live reset link.
func (s *Store) PasswordResetAccount(ctx context.Context, hash []byte, at time.Time) (accounts.Account, error) {
	a, err := scanAccount(s.rdb.QueryRowContext(ctx, `SELECT `+store.AccountColumns+` FROM password_resets r JOIN accounts a ON a.id = r.account_id
		WHERE r.hash = ? AND r.expires_at > ?`, hash, micro(at)))
	if errors.Is(err, sql.ErrNoRows) {
		return accounts.Account{}, fmt.Errorf("read reset link: %w", accounts.ErrResetInvalid)
	}
	if err != nil {
		return accounts.Account{}, classify("read reset link", err)
	}
	return a, nil
}

// UsePasswordReset burns the link, sets the password and ends the
// sessions, together.
func (s *Store) UsePasswordReset(ctx context.Context, hash []byte, accountID string, at time.Time, passwordHash string, e accounts.Entry) error {
	return s.accountsTx(ctx, "use reset link", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM password_resets WHERE hash = ? AND account_id = ? AND expires_at > ?`, hash, accountID, micro(at))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return refuse(accounts.ErrResetInvalid)
		}
		for _, q := range []string{
			`DELETE FROM password_resets WHERE account_id = ?`,
			`DELETE FROM sessions WHERE account_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, accountID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET password_hash = ?, updated_at = ? WHERE id = ?`, passwordHash, micro(at), accountID); err != nil {
			return err
		}
		return appendAudit(ctx, tx, e)
	})
}

// AppendAudit records an entry.
func (s *Store) AppendAudit(ctx context.Context, e accounts.Entry) error {
	if err := appendAudit(ctx, s.wdb, e); err != nil {
		return classify("record audit entry", err)
	}
	return nil
}

// ListAudit lists entries newest first, keyset-paged by id.
func (s *Store) ListAudit(ctx context.Context, f accounts.AuditFilter) ([]accounts.Entry, error) {
	var (
		where []string
		args  []any
	)
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	if f.Sites != nil {
		if len(f.Sites) == 0 {
			return nil, nil
		}
		where = append(where, "site IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.Sites)), ", ")+")")
		for _, site := range f.Sites {
			args = append(args, site)
		}
	}
	if f.Form != "" {
		where, args = append(where, "form = ?"), append(args, f.Form)
	}
	q := `SELECT id, at, actor, action, site, form, target, detail FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = accounts.DefaultAuditLimit
	}
	rows, err := s.rdb.QueryContext(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, classify("read audit log", err)
	}
	defer rows.Close()
	var out []accounts.Entry
	for rows.Next() {
		var e accounts.Entry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.Site, &e.Form, &e.Target, &e.Detail); err != nil {
			return nil, classify("read audit log", err)
		}
		e.At = time.UnixMicro(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read audit log", err)
	}
	return out, nil
}
