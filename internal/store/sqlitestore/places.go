package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// Options with places of their own (migration 0074): the form's row in
// capacity names the field (place_field), option_places counts each
// option's places, and entries.place is the option an entry holds, waits
// for, or was turned away by. The one writer serializes every decision,
// so the form's guarded update and the option's see no other writer
// between them; the order is the PostgreSQL store's all the same (the
// form's row, then the option's).

// optionOfEntry reads, in one query, whether the form (?1) has review and
// the option with places that an inserted entry (?2) chose: NULL when
// the form has no place field or the entry left it empty; no row for a
// form without settings. The value is read from the entry's own data,
// so that a decision needs nothing from intake beyond what it journaled.
const optionOfEntry = `SELECT c.review, (SELECT o.value FROM entries e JOIN option_places o ON o.form = c.form
		AND o.value = json_extract(CAST(e.data AS TEXT), '$."' || c.place_field || '"')
		WHERE e.id = ?2 AND c.place_field IS NOT NULL)
	FROM capacity c WHERE c.form = ?1`

// optionFullGeneric finds the option an entry (?2) chose when its places
// are all taken on a form (?1) that turns people away with unique_answer
// generic: a registered participant's new key for it is answered as
// anyone new would be (capacity-reached naming the option), so that a
// full session cannot be asked who is registered.
const optionFullGeneric = `SELECT o.value FROM capacity c JOIN entries e ON e.id = ?2
	JOIN option_places o ON o.form = c.form AND o.value = json_extract(CAST(e.data AS TEXT), '$."' || c.place_field || '"')
	WHERE c.form = ?1 AND c.place_field IS NOT NULL AND c.when_full != 'waitlist' AND c.unique_answer = 'generic'
		AND o.capacity IS NOT NULL AND o.taken >= o.capacity`

// fullOptionGeneric is optionFullGeneric's option, "" for none; the entry
// is marked with it, for the answer.
func fullOptionGeneric(ctx context.Context, st *stmts, formID, id string) (string, error) {
	var option string
	switch err := st.optionFull.QueryRowContext(ctx, formID, id).Scan(&option); {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read whether the option is full: %w", err)
	}
	return option, markPlace(ctx, st, option, id)
}

// takeOptionPlace is the guarded update of one option's places.
const takeOptionPlace = `UPDATE option_places SET taken = taken + 1
	WHERE form = ?1 AND value = ?2 AND (capacity IS NULL OR taken < capacity)`

// takePlace takes an entry's places: the form's, then its option's when
// it chose one with places (option), both or neither. optionFull says
// the option's places were the ones taken; review that the form has
// review (review.go). The caller marks the entry with its option
// (entries.place) as it settles it.
func takePlace(ctx context.Context, st *stmts, formID, id string) (took bool, option string, optionFull, review bool, err error) {
	var opt sql.NullString
	switch err := st.option.QueryRowContext(ctx, formID, id).Scan(&review, &opt); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, "", false, false, fmt.Errorf("read the entry's option: %w", err)
	}
	option = opt.String
	res, err := st.take.ExecContext(ctx, formID)
	if err != nil {
		return false, "", false, false, fmt.Errorf("take a place: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, option, false, review, nil
	}
	if option == "" {
		return true, "", false, review, nil
	}
	res, err = st.takeOption.ExecContext(ctx, formID, option)
	if err != nil {
		return false, "", false, false, fmt.Errorf("take the option's place: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, option, false, review, nil
	}
	if _, err := st.untake.ExecContext(ctx, formID); err != nil {
		return false, "", false, false, fmt.Errorf("give back the form's place: %w", err)
	}
	return false, option, true, review, nil
}

// markPlace records the option an entry holds, waits for or was turned
// away by.
func markPlace(ctx context.Context, st *stmts, option, id string) error {
	if option == "" {
		return nil
	}
	if _, err := st.setPlace.ExecContext(ctx, option, id); err != nil {
		return fmt.Errorf("record the entry's option: %w", err)
	}
	return nil
}

// freeOptionPlace gives back the option place a stored entry held.
func freeOptionPlace(ctx context.Context, tx *sql.Tx, formID, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE option_places SET taken = taken - 1
		WHERE form = ?1 AND value = (SELECT place FROM entries WHERE id = ?2) AND taken > 0`, formID, id)
	return err
}

// promote moves the oldest waitlisted entries into free places, one guarded
// place at a time, in (seq, id) order (see store.Cursor). An entry waiting
// for an option takes the option's place with the form's; entries whose
// option is still full are passed over (each option's waitlist keeps its
// own arrival order), and an option the definition no longer limits is
// no limit.
func promote(ctx context.Context, tx *sql.Tx, formID string, now time.Time) ([]string, error) {
	var promoted []string
	for {
		var (
			id    string
			place sql.NullString
		)
		err := tx.QueryRowContext(ctx, `SELECT e.id, e.place FROM entries e WHERE e.form = ?1 AND e.status = 'waitlisted'
			AND (e.place IS NULL OR NOT EXISTS (SELECT 1 FROM option_places o WHERE o.form = ?1 AND o.value = e.place
				AND o.capacity IS NOT NULL AND o.taken >= o.capacity))
			ORDER BY e.seq, e.id LIMIT 1`, formID).Scan(&id, &place)
		if errors.Is(err, sql.ErrNoRows) {
			return promoted, nil
		}
		if err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE capacity SET taken = taken + 1 WHERE form = ? AND (capacity IS NULL OR taken < capacity)`, formID)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return promoted, nil
		}
		if place.Valid {
			// The option's row may be missing (an option the definition
			// dropped before 0074's rows existed): no row, no limit.
			if _, err := tx.ExecContext(ctx, `UPDATE option_places SET taken = taken + 1 WHERE form = ?1 AND value = ?2`, formID, place.String); err != nil {
				return nil, err
			}
		}
		// On a form with review the entry now holding a place waits for
		// it (review.go).
		var status string
		if err := tx.QueryRowContext(ctx, `UPDATE entries SET status = (SELECT CASE WHEN review THEN 'pending' ELSE 'stored' END
			FROM capacity WHERE form = ?1) WHERE id = ?2 RETURNING status`, formID, id).Scan(&status); err != nil {
			return nil, err
		}
		if err := recordEvent(ctx, tx, id, store.EventPromoted, status, now); err != nil {
			return nil, err
		}
		promoted = append(promoted, id)
	}
}

// putPlaces keeps a form's place field and its options' limits, in the
// transaction of PutForms. An option the definition no longer lists
// keeps its row (entries may hold its places) without a limit.
func putPlaces(ctx context.Context, tx *sql.Tx, f form.Record) error {
	var field any
	if f.PlaceField != "" {
		field = f.PlaceField
	}
	if _, err := tx.ExecContext(ctx, `UPDATE capacity SET place_field = ?, review = ? WHERE form = ?`, field, f.Review, f.ID); err != nil {
		return fmt.Errorf("place field: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE option_places SET capacity = NULL WHERE form = ?`, f.ID); err != nil {
		return fmt.Errorf("option places: %w", err)
	}
	for _, o := range f.Places {
		var limit any
		if o.Capacity != nil {
			limit = *o.Capacity
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO option_places(form, value, capacity, taken) VALUES (?, ?, ?, 0)
			ON CONFLICT(form, value) DO UPDATE SET capacity = excluded.capacity`, f.ID, o.Value, limit); err != nil {
			return fmt.Errorf("option %q: %w", o.Value, err)
		}
	}
	return nil
}

// optionCapacities adds each form's option places to out.
func (s *Store) optionCapacities(ctx context.Context, out map[string]store.Capacity) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.OptionCapacityColumns+`
		FROM option_places o JOIN capacity c ON c.form = o.form WHERE c.place_field IS NOT NULL`)
	if err != nil {
		return err
	}
	defer rows.Close()
	return store.AddOptionCapacities(rows, out)
}
