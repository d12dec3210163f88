package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/jackc/pgx/v5"
)

// Check-in at the door (migration 0081), as in the embedded store: the
// checkins row is the entry's first check-in, its primary key the rule
// across instances; checkin_scans keeps each scan's answer by its key.

var _ store.Checkins = (*Store)(nil)

// errScanRaced rolls back a scan whose key another transaction answered
// while this one decided: the answer is read again, as a replay.
var errScanRaced = errors.New("scan key answered by another transaction")

// CheckIn decides a scan in one transaction. The entry's row is locked
// (FOR SHARE) so that a cancel cannot slip between the status read and
// the check-in; of two doors' scans at once, the second insert into
// checkins waits for the first's commit and then conflicts, so it reads
// the first check-in and answers already_checked_in.
func (s *Store) CheckIn(ctx context.Context, sc store.Scan) (store.ScanResult, error) {
	var (
		r       store.ScanResult
		refused error
	)
	err := s.inTx(ctx, "check in", func(tx pgx.Tx) error {
		var ok bool
		var err error
		if r, ok, err = pgScanAnswer(ctx, tx, sc); ok || err != nil {
			refused = err
			return nil
		}
		r, refused = store.ScanResult{EntryID: sc.EntryID}, nil
		err = tx.QueryRow(ctx, `SELECT status FROM entries WHERE form = $1 AND id = $2 FOR SHARE`, sc.Form, sc.EntryID).Scan(&r.Status)
		if errors.Is(err, pgx.ErrNoRows) {
			refused = fmt.Errorf("check in %s/%s: %w", sc.Form, sc.EntryID, store.ErrNotFound)
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the entry: %w", err)
		}
		now := micro(s.now())
		if r.Status == store.StatusStored {
			// Two statements, not one with a CTE: the row another
			// transaction committed while this insert waited is visible
			// only to a statement that starts after it (READ COMMITTED
			// takes a snapshot per statement).
			inserted := true
			err := tx.QueryRow(ctx, `INSERT INTO checkins(entry_id, form, door, scanned_at, at, scan_key) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (entry_id) DO NOTHING RETURNING door, at`,
				sc.EntryID, sc.Form, sc.Door, micro(sc.ScannedAt), now, sc.Key).Scan(&r.Door, &r.At)
			if errors.Is(err, pgx.ErrNoRows) {
				inserted = false
				err = tx.QueryRow(ctx, `SELECT door, at FROM checkins WHERE entry_id = $1`, sc.EntryID).Scan(&r.Door, &r.At)
			}
			if err != nil {
				return fmt.Errorf("check in: %w", err)
			}
			r.At = r.At.UTC()
			r.Result = store.AlreadyCheckedIn
			if inserted {
				r.Result = store.CheckedIn
				if _, err := tx.Exec(ctx, `SELECT formd_event($1, $2, $3, (SELECT site FROM entries WHERE id = $1), $4, $5)`,
					sc.EntryID, store.EventCheckedIn, sc.Form, r.Status, now); err != nil {
					return fmt.Errorf("check in: event: %w", err)
				}
			}
		} else {
			r.Result = store.NotValidNow
		}
		var firstAt *time.Time
		if !r.At.IsZero() {
			firstAt = &r.At
		}
		tag, err := tx.Exec(ctx, `INSERT INTO checkin_scans(form, key, entry_id, result, status, door, first_at, door_sent, scanned_at, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (form, key) DO NOTHING`,
			sc.Form, sc.Key, sc.EntryID, r.Result, r.Status, r.Door, firstAt, sc.Door, micro(sc.ScannedAt), now)
		if err != nil {
			return fmt.Errorf("check in: keep the answer: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errScanRaced
		}
		return nil
	})
	if errors.Is(err, errScanRaced) {
		err = s.inTx(ctx, "check in: read the answer", func(tx pgx.Tx) error {
			var ok bool
			r, ok, refused = pgScanAnswer(ctx, tx, sc)
			if !ok && refused == nil {
				return fmt.Errorf("the answer of key %q is gone", sc.Key)
			}
			return nil
		})
	}
	if err != nil {
		return store.ScanResult{}, err
	}
	return r, refused
}

// pgScanAnswer is the answer a scan's key got before, if it was sent
// before (ok); a key sent before for another entry is ErrScanKeyReused.
func pgScanAnswer(ctx context.Context, tx pgx.Tx, sc store.Scan) (store.ScanResult, bool, error) {
	r := store.ScanResult{Replayed: true}
	var at *time.Time
	err := tx.QueryRow(ctx, `SELECT entry_id, result, status, door, first_at FROM checkin_scans WHERE form = $1 AND key = $2`, sc.Form, sc.Key).
		Scan(&r.EntryID, &r.Result, &r.Status, &r.Door, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return store.ScanResult{}, false, nil
	case err != nil:
		return r, false, classify("check in: read the key", err)
	case r.EntryID != sc.EntryID:
		return store.ScanResult{}, true, fmt.Errorf("check in %s under key %q: %w", sc.EntryID, sc.Key, store.ErrScanKeyReused)
	}
	if at != nil {
		r.At = at.UTC()
	}
	return r, true, nil
}

// UndoCheckIn deletes the entry's check-in: the next scan lets it in.
func (s *Store) UndoCheckIn(ctx context.Context, form, id string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM checkins WHERE form = $1 AND entry_id = $2`, form, id)
	if err != nil {
		return false, classify("undo a check-in", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Roster lists the form's entries that hold or held a place, in arrival
// order, with their first check-ins.
func (s *Store) Roster(ctx context.Context, form string) ([]store.RosterEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.id, e.status, e.data, c.door, c.at FROM entries e
		LEFT JOIN checkins c ON c.entry_id = e.id
		WHERE e.form = $1 AND e.status IN ('stored', 'waitlisted', 'pending', 'cancelled', 'declined')
		ORDER BY e.seq, e.id`, form)
	if err != nil {
		return nil, classify("read the roster", err)
	}
	defer rows.Close()
	var out []store.RosterEntry
	for rows.Next() {
		var (
			e    store.RosterEntry
			data []byte
			door *string
			at   *time.Time
		)
		if err := rows.Scan(&e.ID, &e.Status, &data, &door, &at); err != nil {
			return nil, classify("read the roster", err)
		}
		e.Data = data
		if at != nil {
			e.Door, e.CheckedInAt = *door, at.UTC()
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read the roster", err)
	}
	return out, nil
}
