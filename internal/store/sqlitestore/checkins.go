package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/store"
)

// Check-in at the door (migration 0081): the checkins row is the entry's
// first check-in, its primary key the rule; checkin_scans keeps each
// scan's answer by its idempotency key.

var _ store.Checkins = (*Store)(nil)

// CheckIn decides a scan in one transaction: a key seen before gets its
// first answer; an entry that is not stored is not valid now; else the
// insert into checkins decides whether this scan is the first, and the
// first writes its event (the outbox) with it. The one writer serializes
// two doors' scans, so the second reads the first's row.
func (s *Store) CheckIn(ctx context.Context, sc store.Scan) (store.ScanResult, error) {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return store.ScanResult{}, classify("check in: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if r, ok, err := scanAnswer(ctx, tx, sc); ok || err != nil {
		return r, err
	}
	r := store.ScanResult{EntryID: sc.EntryID}
	err = tx.QueryRowContext(ctx, `SELECT status FROM entries WHERE form = ? AND id = ?`, sc.Form, sc.EntryID).Scan(&r.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("check in %s/%s: %w", sc.Form, sc.EntryID, store.ErrNotFound)
	}
	if err != nil {
		return r, classify("check in: read the entry", err)
	}
	now := s.now()
	switch {
	case r.Status != store.StatusStored:
		r.Result = store.NotValidNow
	default:
		res, err := tx.ExecContext(ctx, `INSERT INTO checkins(entry_id, form, door, scanned_at, at, scan_key) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (entry_id) DO NOTHING`, sc.EntryID, sc.Form, sc.Door, sc.ScannedAt.UnixMicro(), now.UnixMicro(), sc.Key)
		if err != nil {
			return r, classify("check in", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			r.Result, r.Door, r.At = store.CheckedIn, sc.Door, time.UnixMicro(now.UnixMicro()).UTC()
			if err := recordEvent(ctx, tx, sc.EntryID, store.EventCheckedIn, r.Status, now); err != nil {
				return r, classify("check in: event", err)
			}
			break
		}
		var at int64
		if err := tx.QueryRowContext(ctx, `SELECT door, at FROM checkins WHERE entry_id = ?`, sc.EntryID).Scan(&r.Door, &at); err != nil {
			return r, classify("check in: read the first check-in", err)
		}
		r.Result, r.At = store.AlreadyCheckedIn, time.UnixMicro(at).UTC()
	}
	var firstAt int64
	if !r.At.IsZero() {
		firstAt = r.At.UnixMicro()
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO checkin_scans(form, key, entry_id, result, status, door, first_at, door_sent, scanned_at, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sc.Form, sc.Key, sc.EntryID, r.Result, r.Status, r.Door, firstAt, sc.Door, sc.ScannedAt.UnixMicro(), now.UnixMicro()); err != nil {
		return r, classify("check in: keep the answer", err)
	}
	if err := tx.Commit(); err != nil {
		return r, classify("check in: commit", err)
	}
	return r, nil
}

// scanAnswer is the answer a scan's key got before, if it was sent before
// (ok); a key sent before for another entry is ErrScanKeyReused.
func scanAnswer(ctx context.Context, tx *sql.Tx, sc store.Scan) (store.ScanResult, bool, error) {
	r := store.ScanResult{Replayed: true}
	var at int64
	err := tx.QueryRowContext(ctx, `SELECT entry_id, result, status, door, first_at FROM checkin_scans WHERE form = ? AND key = ?`, sc.Form, sc.Key).
		Scan(&r.EntryID, &r.Result, &r.Status, &r.Door, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ScanResult{}, false, nil
	case err != nil:
		return r, false, classify("check in: read the key", err)
	case r.EntryID != sc.EntryID:
		return store.ScanResult{}, true, fmt.Errorf("check in %s under key %q: %w", sc.EntryID, sc.Key, store.ErrScanKeyReused)
	}
	if at != 0 {
		r.At = time.UnixMicro(at).UTC()
	}
	return r, true, nil
}

// UndoCheckIn deletes the entry's check-in: the next scan lets it in.
func (s *Store) UndoCheckIn(ctx context.Context, form, id string) (bool, error) {
	res, err := s.wdb.ExecContext(ctx, `DELETE FROM checkins WHERE form = ? AND entry_id = ?`, form, id)
	if err != nil {
		return false, classify("undo a check-in", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Roster lists the form's entries that hold or held a place, in arrival
// order, with their first check-ins.
func (s *Store) Roster(ctx context.Context, form string) ([]store.RosterEntry, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.id, e.status, e.data, c.door, c.at FROM entries e
		LEFT JOIN checkins c ON c.entry_id = e.id
		WHERE e.form = ? AND e.status IN ('stored', 'waitlisted', 'pending', 'cancelled', 'declined')
		ORDER BY e.seq, e.id`, form)
	if err != nil {
		return nil, classify("read the roster", err)
	}
	defer rows.Close()
	var out []store.RosterEntry
	for rows.Next() {
		var (
			e    store.RosterEntry
			data []byte // NULL once the entry's data is erased
			door sql.NullString
			at   sql.NullInt64
		)
		if err := rows.Scan(&e.ID, &e.Status, &data, &door, &at); err != nil {
			return nil, classify("read the roster", err)
		}
		e.Data = data
		if at.Valid {
			e.Door, e.CheckedInAt = door.String, time.UnixMicro(at.Int64).UTC()
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read the roster", err)
	}
	return out, nil
}
