package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/formd/formd/internal/problem"
)

// EventCheckedIn is written when an entry is checked in at the door for
// the first time (never for a second scan, nor after an undo's new first).
const EventCheckedIn = "submission.checked_in"

// The answers to a scan at the door.
const (
	// CheckedIn is the entry's first check-in: this scan let it in.
	CheckedIn = "checked_in"
	// AlreadyCheckedIn is a scan of an entry checked in before (by
	// another scan, at any door, on any instance): ScanResult names the
	// first check-in's time and door.
	AlreadyCheckedIn = "already_checked_in"
	// NotValidNow is a scan of an entry that is not stored (waitlisted,
	// pending, cancelled, declined…): ScanResult.Status says which.
	NotValidNow = "not_valid_now"
)

// ErrScanKeyReused means a scan's idempotency key was used before for a
// scan of another entry: nothing was decided.
var ErrScanKeyReused error = problem.Sentinel("scan key used for another ticket", problem.CodeKeyReused)

// Scan is one check-in event from a door: the entry its ticket names, the
// idempotency key the door gave it, the door's name and when it was
// scanned (the door's clock: a scan made offline is sent later).
type Scan struct {
	Form      string
	EntryID   string
	Key       string
	Door      string
	ScannedAt time.Time
}

// ScanResult is the answer to a scan, the same every time its key is
// sent again (Replayed then).
type ScanResult struct {
	Result  string
	EntryID string
	// Status is the entry's status when it was scanned.
	Status string
	// Door and At are the entry's first check-in's (for CheckedIn, this
	// scan's); zero for NotValidNow.
	Door string
	At   time.Time
	// Replayed says the answer was decided by an earlier send of the key.
	Replayed bool
}

// RosterEntry is an entry of a form with check-in as the door sees it:
// every entry that holds or held a place (stored, waitlisted, pending,
// cancelled, declined), its data (nil once erased) and its first
// check-in, if any.
type RosterEntry struct {
	ID          string
	Status      string
	Data        json.RawMessage
	CheckedInAt time.Time // zero: not checked in
	Door        string
}

// Checkins decides check-ins at the door (forms with checkin: true):
// each entry's first check-in once across instances (a unique row per
// entry), each scan's answer once per idempotency key, the first
// check-in's event (EventCheckedIn) in the same transaction. A scan of an
// entry that is not on the form is ErrNotFound; of a key used for another
// entry, ErrScanKeyReused. UndoCheckIn deletes an entry's check-in (false
// when it had none), so that the next scan lets it in again; the answers
// of earlier scans stay as they were.
type Checkins interface {
	CheckIn(ctx context.Context, s Scan) (ScanResult, error)
	UndoCheckIn(ctx context.Context, form, id string) (bool, error)
	Roster(ctx context.Context, form string) ([]RosterEntry, error)
}
