package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

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
