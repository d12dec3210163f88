package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// PutForms upserts definitions and capacity settings in one transaction,
// each a new version of its form published by no one (formd forms apply
// on the store). The version counter's row lock orders concurrent calls,
// so versions follow commit order and a reader never skips one.
func (s *Store) PutForms(ctx context.Context, forms []form.Record) error {
	return s.PublishForms(ctx, forms, store.FormNote{})
}

// PublishForms is PutForms recording who published and what changed with
// each definition's version, in the same transaction (whose lock on the
// version counter also orders the forms' version numbers).
func (s *Store) PublishForms(ctx context.Context, forms []form.Record, note store.FormNote) error {
	taken := ""
	err := s.inTx(ctx, "put forms", func(tx pgx.Tx) error {
		var version int64
		if err := tx.QueryRow(ctx, `UPDATE meta SET v = v + 1 WHERE k = 'forms_version' RETURNING v`).Scan(&version); err != nil {
			return fmt.Errorf("version: %w", err)
		}
		now := micro(s.now())
		if note.Create {
			claim := store.ClaimFormID(func(n int) string { return "$" + strconv.Itoa(n) })
			for _, f := range forms {
				tag, err := tx.Exec(ctx, claim, f.ID, f.Site, f.Source, version, now)
				if err != nil {
					return fmt.Errorf("claim the id of %s: %w", f.ID, err)
				}
				if tag.RowsAffected() == 0 {
					taken = f.ID
					return errTaken
				}
			}
		}
		b := &pgx.Batch{}
		for _, f := range forms {
			var limit *int
			if f.Capacity != nil {
				n := *f.Capacity
				limit = &n
			}
			whenFull := f.WhenFull
			if whenFull == "" {
				whenFull = "reject"
			}
			b.Queue(`INSERT INTO forms(id, site, source, version, updated_at) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET site = excluded.site, source = excluded.source, version = excluded.version, updated_at = excluded.updated_at`,
				f.ID, f.Site, f.Source, version, now)
			b.Queue(store.InsertFormVersion("$1", "$1", "$2", "$3", "$4", "$5", "$6", "$7"),
				f.ID, f.Site, f.Source, now, note.By, note.ActionOr(), note.Summary[f.ID])
			uniqueAnswer := f.UniqueAnswer
			if uniqueAnswer == "" {
				uniqueAnswer = form.UniqueAnswerGeneric
			}
			b.Queue(`INSERT INTO capacity(form, capacity, when_full, unique_answer, taken) VALUES ($1, $2, $3, $4, 0)
				ON CONFLICT (form) DO UPDATE SET capacity = excluded.capacity, when_full = excluded.when_full, unique_answer = excluded.unique_answer`,
				f.ID, limit, whenFull, uniqueAnswer)
			queuePlaces(b, f)
			b.Queue(`SELECT count(*) FROM formd_promote($1, $2)`, f.ID, now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, errTaken) {
		// Not a failure of the database: the answer for the caller.
		return fmt.Errorf("put form %s: %w", taken, store.ErrFormExists)
	}
	return err
}

// errTaken rolls back a PublishForms whose new form's id is taken.
var errTaken = errors.New("the form id is taken")

// Forms returns the forms changed after version, up to the newest version
// committed when it looked.
func (s *Store) Forms(ctx context.Context, after int64) ([]form.Record, int64, error) {
	var latest int64
	if err := s.pool.QueryRow(ctx, `SELECT v FROM meta WHERE k = 'forms_version'`).Scan(&latest); err != nil {
		return nil, 0, classify("read forms version", err)
	}
	if latest <= after {
		return nil, latest, nil
	}
	// No upper bound: a form changed by a commit between the two reads
	// has a version above latest and would otherwise be left out of this
	// answer although its old version is no longer there either (an
	// instance starting beside another applying forms knew no form for a
	// moment). Read again next time, it is only read twice.
	rows, err := s.pool.Query(ctx, `SELECT `+store.FormColumns+`
		FROM forms f LEFT JOIN capacity c ON c.form = f.id WHERE f.version > $1 ORDER BY f.id`, after)
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
	rows, err := s.pool.Query(ctx, `SELECT `+store.CapacityColumns+` FROM capacity c`)
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
	rows, err := s.pool.Query(ctx, store.PlaceCountsQuery(func(n int) string { return "$" + strconv.Itoa(n) }), form)
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
