package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Drafts = (*Store)(nil)

// SaveDraft creates or replaces a draft in one transaction, committed
// before it returns. A save racing its key's decision on another
// connection may commit a draft the decision did not see; every read and
// save of it finds the entry first (SubmittedDraftError), and retention
// deletes it when it expires.
func (s *Store) SaveDraft(ctx context.Context, p store.DraftSave) (store.Draft, error) {
	d := store.Draft{Form: p.Form, Key: p.Key, Data: p.Data, SavedAt: micro(p.Now), ExpiresAt: micro(p.Now.Add(p.TTL))}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := submitted(ctx, tx, p.Form, p.Key); err != nil {
			return err
		}
		if p.Version == 0 {
			tag, err := tx.Exec(ctx, `INSERT INTO drafts(form, key, site, token_hash, version, data, saved_at, expires_at)
				VALUES ($1, $2, $3, $4, 1, $5, $6, $7)
				ON CONFLICT (form, key) DO UPDATE SET site = excluded.site, token_hash = excluded.token_hash, version = 1,
					data = excluded.data, saved_at = excluded.saved_at, expires_at = excluded.expires_at
				WHERE drafts.expires_at <= excluded.saved_at`,
				p.Form, p.Key, p.Site, p.TokenHash, []byte(p.Data), d.SavedAt, d.ExpiresAt)
			if err != nil {
				return classify("save draft", err)
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, store.ErrDraftExists)
			}
			d.Version = 1
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE drafts SET version = version + 1, data = $1, saved_at = $2, expires_at = $3
			WHERE form = $4 AND key = $5 AND token_hash = $6 AND version = $7 AND expires_at > $2`,
			[]byte(p.Data), d.SavedAt, d.ExpiresAt, p.Form, p.Key, p.TokenHash, p.Version)
		if err != nil {
			return classify("save draft", err)
		}
		if tag.RowsAffected() == 1 {
			d.Version = p.Version + 1
			return nil
		}
		var current int64
		err = tx.QueryRow(ctx, `SELECT version FROM drafts WHERE form = $1 AND key = $2 AND token_hash = $3 AND expires_at > $4`,
			p.Form, p.Key, p.TokenHash, d.SavedAt).Scan(&current)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, store.ErrDraftNotFound)
		case err != nil:
			return classify("save draft: read the version", err)
		}
		return fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, &store.StaleDraftError{Current: current})
	})
	return d, err
}

// submitted is a SubmittedDraftError when (form, key) has an entry.
func submitted(ctx context.Context, q queryer, form, key string) error {
	var status string
	switch err := q.QueryRow(ctx, `SELECT status FROM entries WHERE form = $1 AND key = $2`, form, key).Scan(&status); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return classify("draft: read the key's entry", err)
	}
	return fmt.Errorf("draft %s/%s: %w", form, key, &store.SubmittedDraftError{Status: status})
}

// Draft reads the draft the token hash opens.
func (s *Store) Draft(ctx context.Context, form, key string, tokenHash []byte, now time.Time) (store.Draft, error) {
	d := store.Draft{Form: form}
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT key, version, data, saved_at, expires_at FROM drafts
		WHERE token_hash = $1 AND form = $2 AND ($3 = '' OR key = $3) AND expires_at > $4`,
		tokenHash, form, key, micro(now)).Scan(&d.Key, &d.Version, &data, &d.SavedAt, &d.ExpiresAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if key != "" {
			if err := submitted(ctx, s.pool, form, key); err != nil {
				return d, err
			}
		}
		return d, fmt.Errorf("read draft %s/%s: %w", form, key, store.ErrDraftNotFound)
	case err != nil:
		return d, classify("read draft", err)
	}
	if err := submitted(ctx, s.pool, form, d.Key); err != nil {
		return d, err
	}
	d.Data = data
	return d, nil
}

// ExpireDrafts deletes drafts that expired, a bounded few; instances
// running it at once skip each other's rows.
func (s *Store) ExpireDrafts(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM drafts WHERE (form, key) IN (
		SELECT form, key FROM drafts WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, micro(now), limit)
	if err != nil {
		return 0, classify("expire drafts", err)
	}
	return int(tag.RowsAffected()), nil
}

// FindDrafts lists the drafts whose data holds a needle.
func (s *Store) FindDrafts(ctx context.Context, needles [][]byte, limit int) ([]store.DraftRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT form, key, site FROM drafts
		WHERE EXISTS (SELECT 1 FROM unnest($1::bytea[]) n WHERE position(n IN data) > 0) ORDER BY form, key LIMIT $2`, needles, limit)
	if err != nil {
		return nil, classify("find drafts", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.DraftRef, error) {
		var d store.DraftRef
		return d, r.Scan(&d.Form, &d.Key, &d.Site)
	})
	if err != nil {
		return nil, classify("find drafts", err)
	}
	return out, nil
}

// EraseDrafts deletes the drafts named, in one statement.
func (s *Store) EraseDrafts(ctx context.Context, refs []store.DraftRef) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	forms, keys := make([]string, len(refs)), make([]string, len(refs))
	for i, d := range refs {
		forms[i], keys[i] = d.Form, d.Key
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM drafts WHERE (form, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, forms, keys)
	if err != nil {
		return 0, classify("erase drafts", err)
	}
	return int(tag.RowsAffected()), nil
}

// WaitlistPosition is the place of a waitlisted entry in its waitlist,
// from 1 (its option's, when it waits for an option's place), in the
// order promotion serves it; 0 when the entry is not waitlisted.
func (s *Store) WaitlistPosition(ctx context.Context, form, id string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM entries e JOIN entries w ON w.form = e.form AND w.status = 'waitlisted'
		AND (w.seq, w.id) <= (e.seq, e.id) AND (e.place IS NULL OR w.place = e.place)
		WHERE e.form = $1 AND e.id = $2 AND e.status = 'waitlisted'`, form, id).Scan(&n)
	if err != nil {
		return 0, classify("waitlist position", err)
	}
	return n, nil
}
