package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/problem"
)

// EventUpdated is the event of a participant's change of a live entry's
// answers (Changes.Change).
const EventUpdated = "submission.updated"

// Changes are a participant's changes of their own live entry (DESIGN §4
// "The participant's link", issue 33 item 3). The rules every driver
// keeps, pinned by storetest:
//
//   - an entry is numbered: version 1 when it is decided, one more at each
//     change; a change names the version it was made from (If-Match), and
//     a stale one changes nothing (StaleEntryError, with the current
//     version) — except a retry of the change that made the current
//     version (the version before it named and the same fingerprint),
//     which is answered as that change (Changed.Replayed) and changes
//     nothing again;
//   - only a live entry (stored, pending, waitlisted) changes; others are
//     ErrNotLive, an unknown one ErrNotFound;
//   - the participant's claims are decided again in the change's
//     transaction: a claim another live entry holds refuses the change
//     (ErrChangeDuplicate), and the entry keeps the claims it had;
//   - a change of the option with places is decided by the option's
//     guarded update in the same transaction: an entry holding a place
//     moves into the new option's place only if one is free, and gives the
//     old one back; a full option refuses the change (OptionFullError
//     naming it), whatever when_full says, and the place held is kept. A
//     waitlisted entry waits for the new option instead, in its first
//     arrival order. A freed option place promotes the waitlist;
//   - the version replaced is kept in the entry's history (Versions) for
//     the organizer, and the change writes its submission.updated event
//     (the outbox) in the same transaction; erasure erases the history
//     with the entry.
type Changes interface {
	// Change applies a participant's change.
	Change(ctx context.Context, c Change) (Changed, error)
	// EntryVersion is the current version of a live or past entry.
	EntryVersion(ctx context.Context, form, id string) (int, error)
	// Versions lists the versions an entry's changes replaced, oldest
	// first (none once the entry is erased).
	Versions(ctx context.Context, form, id string) ([]EntryVersion, error)
}

// Change is one change of an entry's answers, validated as a new
// submission is (form.Validate): its data, fingerprint and claims.
type Change struct {
	Form, ID string
	// Version is the version the change was made from (If-Match).
	Version     int
	Data        json.RawMessage
	Fingerprint [32]byte
	Claims      []string
	Now         time.Time
}

// Changed is what a change did.
type Changed struct {
	// Version is the entry's version now; Status its status now.
	Version int
	Status  string
	// Place is the option with places the entry holds or waits for now
	// ("" for none).
	Place string
	// Replayed says this was a retry of the change that made Version:
	// nothing changed now. Same says the data was the current one: nothing
	// changed and no version was made.
	Replayed, Same bool
	// Promoted are the waitlisted entries the freed option place let in.
	Promoted []string
}

// EntryVersion is one earlier version of an entry's answers.
type EntryVersion struct {
	Version int
	Data    json.RawMessage
	// Place is the option with places the entry held or waited for then.
	Place string
	// ReplacedAt is when a change replaced it.
	ReplacedAt time.Time
}

// Errors of changes; each names its problem code.
var (
	// ErrEntryStale is the sentinel of a StaleEntryError.
	ErrEntryStale error = problem.Sentinel("entry version mismatch", problem.CodeEntryStale)
	// ErrChangeDuplicate means the changed answers are another live
	// entry's participant (the form's one-entry-per rule).
	ErrChangeDuplicate error = problem.Sentinel("the changed answers are another entry's participant", problem.CodeDuplicateEntry)
	// ErrOptionFull is the sentinel of an OptionFullError.
	ErrOptionFull error = problem.Sentinel("the option chosen has no place left", problem.CodeCapacityReached)
)

// StaleEntryError is a change that named a version other than the
// current one: nothing changed.
type StaleEntryError struct{ Current int }

func (e *StaleEntryError) Error() string {
	return fmt.Sprintf("entry version mismatch: the current version is %d", e.Current)
}

// Unwrap is ErrEntryStale.
func (e *StaleEntryError) Unwrap() error { return ErrEntryStale }

// OptionFullError is a change to an option with no place left, naming it:
// nothing changed, and the place the entry held is kept.
type OptionFullError struct{ Option string }

func (e *OptionFullError) Error() string {
	return fmt.Sprintf("the option %q has no place left", e.Option)
}

// Unwrap is ErrOptionFull.
func (e *OptionFullError) Unwrap() error { return ErrOptionFull }

// AsStaleEntry finds a StaleEntryError in err's chain.
func AsStaleEntry(err error) (*StaleEntryError, bool) { return errors.AsType[*StaleEntryError](err) }

// AsOptionFull finds an OptionFullError in err's chain.
func AsOptionFull(err error) (*OptionFullError, bool) { return errors.AsType[*OptionFullError](err) }

// ErasureRequests are participants' requests that their entry's data be
// erased (issue 33 item 5): recorded once per entry, listed for the
// organizer while pending, and marked done by the erasure of the entry
// (EraseEntries, retention) in its own transaction.
type ErasureRequests interface {
	// RequestErasure records the request of an entry; a second request
	// of the same entry changes nothing (created false). An unknown or
	// already erased entry is ErrNotFound.
	RequestErasure(ctx context.Context, form, id string, at time.Time) (ErasureRequest, bool, error)
	// ErasureRequest reads the request of an entry; false for none.
	ErasureRequest(ctx context.Context, form, id string) (ErasureRequest, bool, error)
	// ErasureRequests lists the pending requests of a form ("" for all),
	// oldest first, up to limit.
	ErasureRequests(ctx context.Context, form string, limit int) ([]ErasureRequest, error)
}

// NoticeFields names, per form id, the field of an entry that holds the
// person's e-mail address (the form's notify.email.confirm): the erasure
// granting a request copies the address from it onto its EventErased
// event, since after the erasure the entry holds none.
type NoticeFields map[string]string

// ErasureRequest is one participant's request.
type ErasureRequest struct {
	Form, EntryID string
	RequestedAt   time.Time
	// DoneAt is when the entry was erased; zero while pending.
	DoneAt time.Time
}

// DraftCounts are what the organizer sees of a form's drafts: how many,
// and the oldest's last save — never their values.
type DraftCounts struct {
	Form   string
	Count  int
	Oldest time.Time
}

// DraftStats counts drafts for the organizer (console, formd audit).
type DraftStats interface {
	// DraftCounts lists, per form with drafts, how many are kept and the
	// oldest's last save.
	DraftCounts(ctx context.Context) ([]DraftCounts, error)
}
