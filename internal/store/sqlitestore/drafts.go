package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.Drafts = (*Store)(nil)

// SaveDraft creates or replaces a draft in one transaction on the writer
// (synchronous=FULL: committed means on disk). The writer is the one
// that decides submissions, so a save and the decision of its key are
// serialized: a save after the decision finds the entry.
func (s *Store) SaveDraft(ctx context.Context, p store.DraftSave) (store.Draft, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return store.Draft{}, classify("save draft: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	d, err := saveDraft(ctx, tx, p)
	if err != nil {
		return d, err
	}
	if err := tx.Commit(); err != nil {
		return d, classify("save draft: commit", err)
	}
	return d, nil
}

func saveDraft(ctx context.Context, tx *sql.Tx, p store.DraftSave) (store.Draft, error) {
	d := store.Draft{Form: p.Form, Key: p.Key, Data: p.Data, SavedAt: p.Now, ExpiresAt: p.Now.Add(p.TTL)}
	if err := submitted(ctx, tx, p.Form, p.Key); err != nil {
		return d, err
	}
	now, exp := p.Now.UnixMicro(), d.ExpiresAt.UnixMicro()
	if p.Version == 0 {
		// A creation takes the key's place of an expired draft, never a
		// live one's.
		res, err := tx.ExecContext(ctx, `INSERT INTO drafts(form, key, site, token_hash, version, data, saved_at, expires_at)
			VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7)
			ON CONFLICT(form, key) DO UPDATE SET site = excluded.site, token_hash = excluded.token_hash, version = 1,
				data = excluded.data, saved_at = excluded.saved_at, expires_at = excluded.expires_at
			WHERE drafts.expires_at <= excluded.saved_at`,
			p.Form, p.Key, p.Site, p.TokenHash, []byte(p.Data), now, exp)
		if err != nil {
			return d, classify("save draft", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return d, fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, store.ErrDraftExists)
		}
		d.Version = 1
		return d, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE drafts SET version = version + 1, data = ?1, saved_at = ?2, expires_at = ?3
		WHERE form = ?4 AND key = ?5 AND token_hash = ?6 AND version = ?7 AND expires_at > ?2`,
		[]byte(p.Data), now, exp, p.Form, p.Key, p.TokenHash, p.Version)
	if err != nil {
		return d, classify("save draft", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		d.Version = p.Version + 1
		return d, nil
	}
	// Nothing changed: say why (the draft is another's, gone, or newer).
	var current int64
	err = tx.QueryRowContext(ctx, `SELECT version FROM drafts WHERE form = ? AND key = ? AND token_hash = ? AND expires_at > ?`,
		p.Form, p.Key, p.TokenHash, now).Scan(&current)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return d, fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, store.ErrDraftNotFound)
	case err != nil:
		return d, classify("save draft: read the version", err)
	}
	return d, fmt.Errorf("save draft %s/%s: %w", p.Form, p.Key, &store.StaleDraftError{Current: current})
}

// submitted is a SubmittedDraftError when (form, key) has an entry.
func submitted(ctx context.Context, q queryer, form, key string) error {
	var status string
	switch err := q.QueryRowContext(ctx, `SELECT status FROM entries WHERE form = ? AND key = ?`, form, key).Scan(&status); {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return classify("draft: read the key's entry", err)
	}
	return fmt.Errorf("draft %s/%s: %w", form, key, &store.SubmittedDraftError{Status: status})
}

// Draft reads the draft the token hash opens.
func (s *Store) Draft(ctx context.Context, form, key string, tokenHash []byte, now time.Time) (store.Draft, error) {
	d := store.Draft{Form: form}
	var saved, exp int64
	var data []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT key, version, data, saved_at, expires_at FROM drafts
		WHERE token_hash = ?1 AND form = ?2 AND (?3 = '' OR key = ?3) AND expires_at > ?4`,
		tokenHash, form, key, now.UnixMicro()).Scan(&d.Key, &d.Version, &data, &saved, &exp)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// A draft consumed by its submission is gone: say so when the
		// key is known.
		if key != "" {
			if err := submitted(ctx, s.rdb, form, key); err != nil {
				return d, err
			}
		}
		return d, fmt.Errorf("read draft %s/%s: %w", form, key, store.ErrDraftNotFound)
	case err != nil:
		return d, classify("read draft", err)
	}
	if err := submitted(ctx, s.rdb, form, d.Key); err != nil {
		return d, err
	}
	d.Data, d.SavedAt, d.ExpiresAt = data, time.UnixMicro(saved), time.UnixMicro(exp)
	return d, nil
}

// ExpireDrafts deletes drafts that expired, a bounded few.
func (s *Store) ExpireDrafts(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	res, err := s.wdb.ExecContext(ctx, `DELETE FROM drafts WHERE rowid IN (
		SELECT rowid FROM drafts WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, now.UnixMicro(), limit)
	if err != nil {
		return 0, classify("expire drafts", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// FindDrafts lists the drafts whose data holds a needle.
func (s *Store) FindDrafts(ctx context.Context, needles [][]byte, limit int) ([]store.DraftRef, error) {
	if len(needles) == 0 || limit < 1 {
		return nil, nil
	}
	holds, args := holdsAny(needles)
	rows, err := s.rdb.QueryContext(ctx, `SELECT form, key, site FROM drafts WHERE `+holds+` ORDER BY form, key LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, classify("find drafts", err)
	}
	defer rows.Close()
	var out []store.DraftRef
	for rows.Next() {
		var d store.DraftRef
		if err := rows.Scan(&d.Form, &d.Key, &d.Site); err != nil {
			return nil, classify("find drafts", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("find drafts", err)
	}
	return out, nil
}

// EraseDrafts deletes the drafts named, in one transaction.
func (s *Store) EraseDrafts(ctx context.Context, refs []store.DraftRef) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, classify("erase drafts: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	n := 0
	for _, d := range refs {
		res, err := tx.ExecContext(ctx, `DELETE FROM drafts WHERE form = ? AND key = ?`, d.Form, d.Key)
		if err != nil {
			return 0, classify("erase drafts", err)
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	if err := tx.Commit(); err != nil {
		return 0, classify("erase drafts: commit", err)
	}
	return n, nil
}

// WaitlistPosition is the place of a waitlisted entry in its waitlist,
// from 1 (its option's, when it waits for an option's place), in the
// order promotion serves it; 0 when the entry is not waitlisted.
func (s *Store) WaitlistPosition(ctx context.Context, form, id string) (int, error) {
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM entries e JOIN entries w ON w.form = e.form AND w.status = 'waitlisted'
		AND (w.seq < e.seq OR (w.seq = e.seq AND w.id <= e.id)) AND (e.place IS NULL OR w.place = e.place)
		WHERE e.form = ? AND e.id = ? AND e.status = 'waitlisted'`, form, id).Scan(&n)
	if err != nil {
		return 0, classify("waitlist position", err)
	}
	return n, nil
}
