package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Changes = (*Store)(nil)

// Change applies a participant's change in one transaction (see
// store.Changes). The form's capacity row is locked first, as every
// decision and promotion locks it before an option's row, so that
// changes, decisions and cancellations of a form are serialized on it
// and no option is taken past its capacity by two at once.
func (s *Store) Change(ctx context.Context, c store.Change) (store.Changed, error) {
	var now store.Changed
	var refused error
	err := s.inTx(ctx, "change", func(tx pgx.Tx) error {
		now, refused = store.Changed{}, nil
		var (
			version  int
			fp, data []byte
			place    *string
			field    *string
		)
		switch err := tx.QueryRow(ctx, `SELECT place_field FROM capacity WHERE form = $1 FOR UPDATE`, c.Form).Scan(&field); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		}
		err := tx.QueryRow(ctx, `SELECT status, version, fingerprint, data, place FROM entries WHERE form = $1 AND id = $2 FOR UPDATE`, c.Form, c.ID).
			Scan(&now.Status, &version, &fp, &data, &place)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			refused = fmt.Errorf("change %s/%s: %w", c.Form, c.ID, store.ErrNotFound)
			return nil
		case err != nil:
			return err
		case data == nil:
			refused = fmt.Errorf("change %s/%s (erased): %w", c.Form, c.ID, store.ErrNotFound)
			return nil
		}
		now.Version = version
		if place != nil {
			now.Place = *place
		}
		same := string(fp) == string(c.Fingerprint[:])
		switch {
		case version == c.Version+1 && same:
			now.Replayed = true
			return nil
		case version != c.Version:
			refused = &store.StaleEntryError{Current: version}
			return nil
		case now.Status != store.StatusStored && now.Status != store.StatusWaitlisted && now.Status != store.StatusPending:
			refused = fmt.Errorf("change %s/%s (status %s): %w", c.Form, c.ID, now.Status, store.ErrNotLive)
			return nil
		case same:
			now.Same = true
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM claims WHERE entry_id = $1`, c.ID); err != nil {
			return err
		}
		for i, cl := range c.Claims {
			if slices.Contains(c.Claims[:i], cl) {
				continue
			}
			tag, err := tx.Exec(ctx, `INSERT INTO claims(form, claim, entry_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, c.Form, cl, c.ID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				refused = fmt.Errorf("change %s/%s: %w", c.Form, c.ID, store.ErrChangeDuplicate)
				return errRollback
			}
		}
		var opt *string
		if field != nil {
			err := tx.QueryRow(ctx, `SELECT value FROM option_places WHERE form = $1 AND value = convert_from($2::bytea, 'UTF8')::jsonb ->> $3`,
				c.Form, []byte(c.Data), *field).Scan(&opt)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		newPlace := ""
		if opt != nil {
			newPlace = *opt
		}
		moved := newPlace != now.Place
		if moved && now.Status != store.StatusWaitlisted {
			if opt != nil {
				tag, err := tx.Exec(ctx, `UPDATE option_places SET taken = taken + 1 WHERE form = $1 AND value = $2 AND (capacity IS NULL OR taken < capacity)`, c.Form, newPlace)
				if err != nil {
					return err
				}
				if tag.RowsAffected() == 0 {
					refused = fmt.Errorf("change %s/%s: %w", c.Form, c.ID, &store.OptionFullError{Option: newPlace})
					return errRollback
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE option_places SET taken = taken - 1 WHERE form = $1 AND value = $2 AND taken > 0`, c.Form, now.Place); err != nil {
				return err
			}
		}
		at := micro(c.Now)
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO entry_versions(entry_id, version, data, place, replaced_at) VALUES ($1, $2, $3, $4, $5)`, c.ID, version, data, place, at)
		b.Queue(`UPDATE entries SET data = $1, fingerprint = $2, claims = $3, place = $4, version = version + 1 WHERE id = $5`,
			[]byte(c.Data), c.Fingerprint[:], claimsOrEmpty(c.Claims), opt, c.ID)
		b.Queue(`SELECT formd_event($1, $2, $3, (SELECT site FROM entries WHERE id = $1), $4, $5)`, c.ID, store.EventUpdated, c.Form, now.Status, at)
		if moved {
			b.Queue(`SELECT coalesce(array_agg(p), '{}') FROM formd_promote($1, $2) p`, c.Form, at).QueryRow(func(r pgx.Row) error {
				return r.Scan(&now.Promoted)
			})
		}
		b.Queue(`SELECT status FROM entries WHERE id = $1`, c.ID).QueryRow(func(r pgx.Row) error { return r.Scan(&now.Status) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		now.Version, now.Place = version+1, newPlace
		return nil
	})
	if errors.Is(err, errRollback) {
		err = nil
	}
	if err != nil {
		return now, err
	}
	if refused != nil {
		return now, refused
	}
	return now, nil
}

// errRollback rolls a change back whose refusal is in hand.
var errRollback = errors.New("rolled back: refused")

func claimsOrEmpty(c []string) []string {
	if c == nil {
		return []string{}
	}
	return c
}

// EntryVersion is the current version of an entry.
func (s *Store) EntryVersion(ctx context.Context, form, id string) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT version FROM entries WHERE form = $1 AND id = $2`, form, id).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("entry version %s/%s: %w", form, id, store.ErrNotFound)
	}
	if err != nil {
		return 0, classify("entry version", err)
	}
	return v, nil
}

// Versions lists the versions an entry's changes replaced, oldest first.
func (s *Store) Versions(ctx context.Context, form, id string) ([]store.EntryVersion, error) {
	rows, err := s.pool.Query(ctx, `SELECT v.version, v.data, coalesce(v.place, ''), v.replaced_at FROM entry_versions v
		JOIN entries e ON e.id = v.entry_id WHERE e.form = $1 AND v.entry_id = $2 ORDER BY v.version`, form, id)
	if err != nil {
		return nil, classify("entry versions", err)
	}
	out, err := collect(rows, func(r store.Scanner) (store.EntryVersion, error) {
		var v store.EntryVersion
		var data []byte
		err := r.Scan(&v.Version, &data, &v.Place, &v.ReplacedAt)
		v.Data = data
		return v, err
	})
	if err != nil {
		return nil, classify("entry versions", err)
	}
	return out, nil
}

var (
	_ store.ErasureRequests = (*Store)(nil)
	_ store.DraftStats      = (*Store)(nil)
)

// RequestErasure records a participant's request, once per entry.
func (s *Store) RequestErasure(ctx context.Context, form, id string, at time.Time) (store.ErasureRequest, bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO erasure_requests(entry_id, form, requested_at)
		SELECT id, form, $1 FROM entries WHERE form = $2 AND id = $3 AND data IS NOT NULL
		ON CONFLICT (entry_id) DO NOTHING`, micro(at), form, id)
	if err != nil {
		return store.ErasureRequest{}, false, classify("request erasure", err)
	}
	r, ok, err := s.ErasureRequest(ctx, form, id)
	if err == nil && !ok {
		err = fmt.Errorf("request erasure %s/%s: %w", form, id, store.ErrNotFound)
	}
	return r, tag.RowsAffected() == 1, err
}

// ErasureRequest reads the request of an entry.
func (s *Store) ErasureRequest(ctx context.Context, form, id string) (store.ErasureRequest, bool, error) {
	r, err := store.ScanErasureRequest(s.pool.QueryRow(ctx, `SELECT form, entry_id, requested_at, done_at FROM erasure_requests WHERE form = $1 AND entry_id = $2`, form, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, classify("read erasure request", err)
	}
	return r, true, nil
}

// ErasureRequests lists pending requests, oldest first.
func (s *Store) ErasureRequests(ctx context.Context, form string, limit int) ([]store.ErasureRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT form, entry_id, requested_at, done_at FROM erasure_requests
		WHERE done_at IS NULL AND ($1 = '' OR form = $1) ORDER BY requested_at, entry_id LIMIT $2`, form, limit)
	if err != nil {
		return nil, classify("list erasure requests", err)
	}
	out, err := collect(rows, store.ScanErasureRequest)
	if err != nil {
		return nil, classify("list erasure requests", err)
	}
	return out, nil
}

// DraftCounts counts each form's drafts.
func (s *Store) DraftCounts(ctx context.Context) ([]store.DraftCounts, error) {
	rows, err := s.pool.Query(ctx, `SELECT form, count(*)::int, min(saved_at) FROM drafts GROUP BY form ORDER BY form`)
	if err != nil {
		return nil, classify("count drafts", err)
	}
	out, err := collect(rows, func(r store.Scanner) (store.DraftCounts, error) {
		var d store.DraftCounts
		err := r.Scan(&d.Form, &d.Count, &d.Oldest)
		return d, err
	})
	if err != nil {
		return nil, classify("count drafts", err)
	}
	return out, nil
}
