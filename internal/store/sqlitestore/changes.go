package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
)

var _ store.Changes = (*Store)(nil)

// newOption reads the option with places that data (?2) chooses on a
// form (?1): no row when the form has no place field or the value is
// not one of its options.
const newOption = `SELECT o.value FROM capacity c JOIN option_places o ON o.form = c.form
	AND o.value = json_extract(CAST(?2 AS TEXT), '$."' || c.place_field || '"')
	WHERE c.form = ?1 AND c.place_field IS NOT NULL`

// Change applies a participant's change in one transaction (the one
// writer serializes it with every decision): see store.Changes.
func (s *Store) Change(ctx context.Context, c store.Change) (store.Changed, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return store.Changed{}, classify("change: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var (
		status, claims string
		version        int
		fp, data       []byte
		place          sql.NullString
	)
	err = tx.QueryRowContext(ctx, `SELECT status, version, fingerprint, data, place, claims FROM entries WHERE form = ? AND id = ?`, c.Form, c.ID).
		Scan(&status, &version, &fp, &data, &place, &claims)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.Changed{}, fmt.Errorf("change %s/%s: %w", c.Form, c.ID, store.ErrNotFound)
	case err != nil:
		return store.Changed{}, classify("change", err)
	case data == nil:
		return store.Changed{}, fmt.Errorf("change %s/%s (erased): %w", c.Form, c.ID, store.ErrNotFound)
	}
	now := store.Changed{Version: version, Status: status, Place: place.String}
	same := string(fp) == string(c.Fingerprint[:])
	switch {
	case version == c.Version+1 && same:
		now.Replayed = true
		return now, nil
	case version != c.Version:
		return now, &store.StaleEntryError{Current: version}
	case status != store.StatusStored && status != store.StatusWaitlisted && status != store.StatusPending:
		return now, fmt.Errorf("change %s/%s (status %s): %w", c.Form, c.ID, status, store.ErrNotLive)
	case same:
		now.Same = true
		return now, nil
	}
	// The participant: the claims it had go, the new ones are taken; one
	// another entry holds refuses the change (the transaction is rolled
	// back, so the old claims stay).
	if _, err := tx.ExecContext(ctx, releaseClaims, c.ID); err != nil {
		return now, classify("change: release claims", err)
	}
	for i, cl := range c.Claims {
		if slices.Contains(c.Claims[:i], cl) {
			continue
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO claims(form, claim, entry_id) VALUES (?1, `+claimKey("?2")+`, ?3) ON CONFLICT(form, claim) DO NOTHING`, c.Form, cl, c.ID)
		if err != nil {
			return now, classify("change: claim", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return now, fmt.Errorf("change %s/%s: %w", c.Form, c.ID, store.ErrChangeDuplicate)
		}
	}
	// The option with places: decided again by its guarded update.
	var opt sql.NullString
	if err := tx.QueryRowContext(ctx, newOption, c.Form, []byte(c.Data)).Scan(&opt); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return now, classify("change: read the option", err)
	}
	moved := opt.String != place.String
	if moved && status != store.StatusWaitlisted {
		if opt.Valid {
			res, err := tx.ExecContext(ctx, takeOptionPlace, c.Form, opt.String)
			if err != nil {
				return now, classify("change: take the option's place", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return now, fmt.Errorf("change %s/%s: %w", c.Form, c.ID, &store.OptionFullError{Option: opt.String})
			}
		}
		if err := freeOptionPlace(ctx, tx, c.Form, c.ID); err != nil {
			return now, classify("change: give back the option's place", err)
		}
	}
	at := c.Now.UnixMicro()
	if _, err := tx.ExecContext(ctx, `INSERT INTO entry_versions(entry_id, version, data, place, replaced_at) VALUES (?, ?, ?, ?, ?)`,
		c.ID, version, data, place, at); err != nil {
		return now, classify("change: keep the earlier version", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE entries SET data = ?, fingerprint = ?, claims = ?, place = ?, version = version + 1 WHERE id = ?`,
		[]byte(c.Data), c.Fingerprint[:], strings.Join(c.Claims, ","), opt, c.ID); err != nil {
		return now, classify("change", err)
	}
	if err := recordEvent(ctx, tx, c.ID, store.EventUpdated, status, c.Now); err != nil {
		return now, classify("change: event", err)
	}
	if moved {
		// The old option's place is free, or the entry waits for another
		// option: either may let someone in.
		if now.Promoted, err = promote(ctx, tx, c.Form, c.Now); err != nil {
			return now, classify("change: promote", err)
		}
	}
	if err := tx.QueryRowContext(ctx, `SELECT status FROM entries WHERE id = ?`, c.ID).Scan(&now.Status); err != nil {
		return now, classify("change: read the status", err)
	}
	if err := tx.Commit(); err != nil {
		return now, classify("change: commit", err)
	}
	now.Version, now.Place = version+1, opt.String
	return now, nil
}

// EntryVersion is the current version of an entry.
func (s *Store) EntryVersion(ctx context.Context, form, id string) (int, error) {
	var v int
	err := s.rdb.QueryRowContext(ctx, `SELECT version FROM entries WHERE form = ? AND id = ?`, form, id).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("entry version %s/%s: %w", form, id, store.ErrNotFound)
	}
	if err != nil {
		return 0, classify("entry version", err)
	}
	return v, nil
}

// Versions lists the versions an entry's changes replaced, oldest first.
func (s *Store) Versions(ctx context.Context, form, id string) ([]store.EntryVersion, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT v.version, v.data, coalesce(v.place, ''), v.replaced_at FROM entry_versions v
		JOIN entries e ON e.id = v.entry_id WHERE e.form = ? AND v.entry_id = ? ORDER BY v.version`, form, id)
	if err != nil {
		return nil, classify("entry versions", err)
	}
	out, err := collect(rows, func(r store.Scanner) (store.EntryVersion, error) {
		var v store.EntryVersion
		var us int64
		err := r.Scan(&v.Version, &v.Data, &v.Place, &us)
		v.ReplacedAt = time.UnixMicro(us)
		return v, err
	})
	if err != nil {
		return nil, classify("entry versions", err)
	}
	return out, nil
}
