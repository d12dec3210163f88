package sqlitestore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// PutForms upserts definitions and capacity settings in one transaction,
// each a new version of its form published by no one (formd forms apply
// on the store's files).
func (s *Store) PutForms(ctx context.Context, forms []form.Record) error {
	return s.PublishForms(ctx, forms, store.FormNote{})
}

// PublishForms is PutForms recording who published and what changed with
// each definition's version, in the same transaction.
func (s *Store) PublishForms(ctx context.Context, forms []form.Record, note store.FormNote) error {
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
		if note.Create {
			res, err := tx.ExecContext(ctx, store.ClaimFormID(func(n int) string { return "?" + strconv.Itoa(n) }), f.ID, f.Site, f.Source, version, now)
			if err != nil {
				return classify("put form "+f.ID+": claim its id", err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return fmt.Errorf("put form %s: %w", f.ID, store.ErrFormExists)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO forms(id, site, source, version, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET site = excluded.site, source = excluded.source, version = excluded.version, updated_at = excluded.updated_at`,
			f.ID, f.Site, f.Source, version, now); err != nil {
			return classify("put form "+f.ID, err)
		}
		if _, err := tx.ExecContext(ctx, store.InsertFormVersion("?", "?", "?", "?", "?", "?", "?", "?"),
			f.ID, f.ID, f.Site, f.Source, now, note.By, note.ActionOr(), note.Summary[f.ID]); err != nil {
			return classify("put form "+f.ID+": version", err)
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
		if err := putPlaces(ctx, tx, f); err != nil {
			return classify("put form "+f.ID, err)
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
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.FormColumns+`
		FROM forms f LEFT JOIN capacity c ON c.form = f.id WHERE f.version > ? ORDER BY f.id`, after)
	if err != nil {
		return nil, 0, classify("read forms", err)
	}
	out, err := collect(rows, store.ScanForm)
	if err != nil {
		return nil, 0, classify("read forms", err)
	}
	return out, latest, nil
}

// Capacities reports places per form.
func (s *Store) Capacities(ctx context.Context) (map[string]store.Capacity, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.CapacityColumns+` FROM capacity c`)
	if err != nil {
		return nil, classify("read capacity", err)
	}
	defer rows.Close()
	out, err := store.ReadCapacities(rows)
	if err != nil {
		return nil, classify("read capacity", err)
	}
	if err := s.optionCapacities(ctx, out); err != nil {
		return nil, classify("read option places", err)
	}
	return out, nil
}

// CountPlaces counts a form's entries option by option (store.PlaceCount).
func (s *Store) CountPlaces(ctx context.Context, form string) ([]store.PlaceCount, error) {
	rows, err := s.rdb.QueryContext(ctx, store.PlaceCountsQuery(func(n int) string { return "?" + strconv.Itoa(n) }), form)
	if err != nil {
		return nil, classify("count places of "+form, err)
	}
	defer rows.Close()
	var out []store.PlaceCount
	for rows.Next() {
		c, err := store.ScanPlaceCount(rows)
		if err != nil {
			return nil, classify("count places of "+form, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("count places of "+form, err)
	}
	return out, nil
}
