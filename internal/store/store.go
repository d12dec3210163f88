// Package store is where submissions get their one outcome: the contract of
// the store drivers (sqlitestore, pgstore) and the types they share. The
// rules of a decision are the same for every driver and storetest checks
// them:
//
//   - once per key: (form, key) is decided once; deciding it again returns
//     the first outcome, marked Replayed;
//   - once per participant: a claim (form, unique-set token) is held by at
//     most one live entry (stored or waitlisted); a second is a duplicate
//     (a token an entry lists twice is claimed once), except that on a
//     full form that rejects (taken >= capacity, when_full reject) whose
//     unique_answer is generic it is rejected, as a new participant would
//     be, so that the answer does not tell who is registered (the same
//     for a full option the entry chose, FullOption naming it); a resend
//     (SameAs) is a duplicate either way;
//   - no oversell: stored entries never exceed the form's capacity; when it
//     is taken the entry is waitlisted or rejected as the form says, and the
//     waitlist is promoted in arrival (journal) order when places free up,
//     entries sharing a journal position by id (the order of Cursor);
//   - options with places (form.Record.PlaceField): an entry that chose
//     such an option takes a place of the form and one of the option, both
//     guarded, or neither; when either is taken it is waitlisted (for that
//     option: entries.place) or rejected as the form's when_full says, a
//     rejection for the option naming it (Outcome.FullOption). Promotion
//     serves the waitlist in arrival order, skipping the entries whose
//     option is still full; cancelling frees the option's place too;
//   - review (form.Record.Review): an entry that takes its places is
//     pending, not stored, and is live (claims, places) until approved
//     or declined, each once (Reviewer); a promotion on such a form makes
//     the entry pending too;
//   - one transaction per decision: an entry, its claims and its capacity
//     change commit together or not at all.
//
// Uniqueness and capacity are enforced by the database (unique indexes and
// guarded updates), never by reading first and writing after.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
)

// Entry statuses. Decision records the status given when the entry was
// decided; Status is where it is now (a waitlisted entry may be promoted,
// a stored one cancelled).
const (
	StatusStored       = "stored"
	StatusWaitlisted   = "waitlisted"
	StatusDuplicate    = "duplicate"
	StatusRejected     = "rejected"
	StatusSpam         = "spam"
	StatusDeadLettered = "dead-lettered"
	StatusCancelled    = "cancelled"
	// StatusPending is an entry of a form with review: it holds its
	// place (and its option's) and its participant until an editor
	// approves it (stored) or declines it (StatusDeclined, which frees
	// both and promotes the waitlist).
	StatusPending  = "pending"
	StatusDeclined = "declined"
)

// Event types: what happened to an entry, as its history shows it and as
// webhooks and e-mail deliver it. Every decision that makes or changes an
// entry writes its event in the same transaction (the outbox).
const (
	EventStored     = "submission.stored"
	EventWaitlisted = "submission.waitlisted"
	EventPromoted   = "submission.promoted"
	EventCancelled  = "submission.cancelled"
	EventSpam       = "submission.spam"
	EventPending    = "submission.pending"
	EventApproved   = "submission.approved"
	EventDeclined   = "submission.declined"
	// EventErased is written by the erasure that grants a participant's
	// request (EraseEntries with NoticeFields), for the e-mail that tells
	// them it is done. Only that e-mail delivers it: it is not a webhook
	// or chat event (form.DefaultWebhookEvents, and a form may not list
	// it), and its delivery alone reads the address it carries
	// (Delivery.NoticeTo).
	EventErased = "submission.erased"
)

// EventFor is the event a first decision writes, or "" for a decision
// that makes no entry (a duplicate, a rejection, a dead letter).
func EventFor(decision string) string {
	switch decision {
	case StatusStored:
		return EventStored
	case StatusWaitlisted:
		return EventWaitlisted
	case StatusSpam:
		return EventSpam
	case StatusPending:
		return EventPending
	}
	return ""
}

// Reviewer decides the pending entries of a form with review, each
// exactly once across instances: approve makes a pending entry stored;
// decline makes it declined, frees its claims and places and promotes
// the waitlist (the promoted ids are returned). An entry that is not
// pending gets ErrNotPending and nothing changes.
type Reviewer interface {
	Review(ctx context.Context, form, id string, approve bool) (promoted []string, err error)
}

// Event is one event of an entry, from the outbox.
type Event struct {
	Seq     uint64
	EntryID string
	// N numbers the entry's events of this type: 1 unless the entry went
	// through the same change before.
	N      int
	Type   string
	Form   string
	Site   string
	Status string
	At     time.Time
}

// ID is the event's id, stable forever: deliveries of it carry it
// (webhook-id), so receivers can tell a retry from a new event.
func (e Event) ID() string {
	id := "evt_" + e.EntryID + "_" + strings.TrimPrefix(e.Type, "submission.")
	if e.N > 1 {
		id += "_" + strconv.Itoa(e.N)
	}
	return id
}

// Outcome is the decision for one (form, key).
type Outcome struct {
	ID          string
	Form        string
	Key         string
	Decision    string
	Status      string
	ReceivedAt  time.Time
	Fingerprint [32]byte
	// Replayed says the outcome was decided earlier, not by this call.
	Replayed bool
	// Detail is what a refusal decided in the store names: for an entry
	// refused for an upload (StatusUploadUsed, StatusUploadMissing), the
	// upload's code and the field that names it, "code:field"
	// (UploadDetail); "" otherwise, and for entries decided by earlier
	// releases.
	Detail string `json:",omitempty"`
	// SameAs is set when the entry came under a new key with exactly the
	// content of the live entry that holds its participant's claim (a
	// person pressing send again): it is the same submission, answered as
	// that entry, not as a duplicate participant. Its Decision is
	// duplicate.
	SameAs *Original
	// FullOption names the option (of the form's PlaceField) whose places
	// were all taken when the entry was rejected for it, so that the
	// answer can say which session is full; "" for every other outcome,
	// and for a rejection by the form's own capacity.
	FullOption string
	// Linked says the entry's first answer carried the participant's
	// link (member manage): every entry decided since migration 0078.
	// Entries decided before were answered without it, and their
	// retries still are (byte-for-byte).
	Linked bool
}

// Original is the entry a resent submission is answered as: its first
// decision, frozen when the resend was decided.
type Original struct {
	ID         string
	Key        string
	Decision   string
	ReceivedAt time.Time
}

// Capacity is a form's places: the limit (nil for none), how many are
// taken, and how many wait.
type Capacity struct {
	Limit      *int
	Taken      int
	Waitlisted int
	// Options are the places of the options of the form's PlaceField,
	// each counted as the form is (its limit nil when the option has
	// none), by option value; nil for a form without option places.
	Options map[string]Capacity
}

// Left is the number of free places, or -1 for no limit.
func (c Capacity) Left() int {
	if c.Limit == nil {
		return -1
	}
	return max(*c.Limit-c.Taken, 0)
}

// EntryQuery selects a page of a form's entries, newest first.
type EntryQuery struct {
	Form string
	// Statuses, when any, keeps only entries with one of these statuses.
	Statuses []string
	// Since and Until bound the time received (Until exclusive); zero for
	// no bound.
	Since, Until time.Time
	// Before is the cursor of the page: entries older than this one (its
	// Seq and ID, as the last row of the previous page has them); zero for
	// the newest.
	Before Cursor
	// Limit bounds the page; 50 when zero, at most 500.
	Limit int
}

// PageSize is the size of a page of entries for a requested limit.
func PageSize(limit int) int {
	switch {
	case limit <= 0:
		return 50
	case limit > 500:
		return 500
	}
	return limit
}

// Cursor marks a place in a form's entries for keyset paging: the journal
// position, then the id for entries that share one. Entries can share a
// position: the store keeps the position each journal gave, and two
// journals number from 1 each (instances with embedded journals deciding
// into one PostgreSQL store, or a journal begun again). The id is unique,
// so (Seq, ID) orders every entry once and a page never skips or repeats
// one.
type Cursor struct {
	Seq uint64
	ID  string
}

// ExportPage is how many entries Export reads in one query.
const ExportPage = 500

// ExportPages is Export over page, which reads up to ExportPage entries
// of the form after (afterSeq, afterID) in (seq, id) order: it calls fn
// with each entry, a page at a time by that keyset from (-1, ""), until
// a page comes back short. Entries sharing a seq may straddle two pages.
func ExportPages(page func(afterSeq int64, afterID string) ([]Row, error), fn func(Row) error) error {
	afterSeq, afterID := int64(-1), ""
	for {
		rows, err := page(afterSeq, afterID)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
			afterSeq, afterID = int64(r.Seq), r.ID
		}
		if len(rows) < ExportPage {
			return nil
		}
	}
}

// Row is one entry as listed and exported: the read model of an entry that
// the API, the console and exports share (EntryDoc and EntryDetail add to
// it).
type Row struct {
	Seq        uint64
	ID         string
	Form       string
	Key        string
	Status     string
	ReceivedAt time.Time
	Data       json.RawMessage // nil once erased
	// CheckedInAt and Door are the entry's check-in at the door (issue
	// 35); zero and empty when it is not checked in.
	CheckedInAt time.Time
	Door        string
}

// Arrival is what a device reports about one key: that the person pressed
// send (StartedAt) and that a definitive answer came (AnsweredAt, State),
// both by the device's clock; zero when not reported.
type Arrival struct {
	Key        string
	StartedAt  time.Time
	AnsweredAt time.Time
	State      string
}

// ArrivalBatch is one request's arrival reports for a form.
type ArrivalBatch struct {
	Reports []Arrival
	// KnownOnly keeps only the reports on keys the store has an entry
	// for. A report that cannot show it comes from the form's pages (no
	// Origin, as from a mini-program or a script) may confirm a key that
	// arrived but not add one that was never received, so forged keys
	// count for nothing.
	KnownOnly bool
	// Refused counts reports refused before the store (an origin the form
	// does not list, a key unlike the SDK's, over a budget).
	Refused int
}

// ArrivalsKept is how long arrival reports and refusal counts are kept:
// beyond the proof page's 48 hours, for a window asked of the API.
const ArrivalsKept = 7 * 24 * time.Hour

// EntryRef names one entry.
type EntryRef struct {
	ID, Site, Form, Key string
	Seq                 uint64
}

// DeadLetter is an entry the processor gave up on, with why.
type DeadLetter struct {
	ID       string
	Form     string
	Key      string
	Seq      uint64
	Reason   string
	Attempts int
	At       time.Time
}

// EarlierOutcome is the outcome that kept a dead letter of sub out, as
// both drivers' DeadLetter answer it (Replayed): that of sub's key, or
// else that of the entry holding sub's id, whose key keyOfID reads.
func EarlierOutcome(sub journal.Entry, outcome func(form, key string) (Outcome, bool, error),
	keyOfID func(id string) (form, key string, err error)) (Outcome, error) {
	o, ok, err := outcome(sub.Form, sub.Key)
	if err == nil && !ok {
		var form, key string
		form, key, err = keyOfID(sub.ID)
		if err == nil {
			o, ok, err = outcome(form, key)
		}
	}
	if err == nil && !ok {
		err = fmt.Errorf("no entry has key %s/%s or id %s", sub.Form, sub.Key, sub.ID)
	}
	o.Replayed = true
	return o, err
}

// Store is what a store driver provides. Consumers depend on the handful of
// methods they use, declared where they use them. A limit below 1 takes
// or lists nothing (DeadLetters' alone means its default).
type Store interface {
	Outbox
	Budgets
	Reviewer
	FormHistory
	Drafts
	Participants
	Changes
	ErasureRequests
	DraftStats
	Checkins
	FormPurge
	// Apply decides each submission, in order, in one transaction, and
	// returns the outcomes in the same order. An error means nothing was
	// committed.
	Apply(ctx context.Context, subs []journal.Entry) ([]Outcome, error)
	// DeadLetter records that the processor gave up on a submission: its
	// key gets the outcome dead-lettered, and the reason is kept. It never
	// records an entry twice and never refuses one, because an error would
	// leave the processor (and the journal's own dead-lettering) retrying
	// the entry forever: if the key was decided meanwhile or dead-lettered
	// before, that outcome is returned, Replayed, and the first reason
	// stays. An entry whose id another key's entry holds (ids are unique,
	// so Apply refuses it) cannot have a row of its own: the outcome of the
	// entry holding the id is returned, Replayed, and the journal keeps the
	// entry, which an audit lists as missing.
	DeadLetter(ctx context.Context, e journal.Entry, reason string, attempts int) (Outcome, error)
	// Outcome reads the outcome of (form, key); false when undecided.
	Outcome(ctx context.Context, form, key string) (Outcome, bool, error)
	// Cancel marks a stored or waitlisted entry cancelled (never deleted),
	// frees its claims and place, and promotes the oldest waitlisted entries
	// into free places. It returns the promoted entries' ids.
	Cancel(ctx context.Context, form, id string) (promoted []string, err error)
	// Entries reads a page of a form's entries, newest first, by keyset
	// (a page costs the same at the millionth entry as at the first).
	Entries(ctx context.Context, q EntryQuery) ([]Row, error)
	// History lists an entry's events, oldest first.
	History(ctx context.Context, entryID string) ([]Event, error)
	// MarkSpam takes a stored or waitlisted entry out as spam: its claims
	// and place are freed and the waitlist promoted (their ids returned);
	// its decision becomes spam.
	MarkSpam(ctx context.Context, form, id string) (promoted []string, err error)
	// NotSpam decides an entry classed as spam again as a real submission:
	// participant, place, waitlist, as for a new one.
	NotSpam(ctx context.Context, form, id string) (Outcome, error)
	// PutForms creates or replaces form definitions and their capacity
	// settings; when places grow, waitlisted entries are promoted.
	PutForms(ctx context.Context, forms []form.Record) error
	// Forms returns the forms changed after version, and the newest version.
	Forms(ctx context.Context, after int64) ([]form.Record, int64, error)
	// Capacities reports places per form.
	Capacities(ctx context.Context) (map[string]Capacity, error)
	// CountPlaces counts, option by option, the entries of a form holding
	// or waiting for the option's place, from the entries themselves, beside
	// the option's counter and capacity: what an audit compares (PlaceCount).
	CountPlaces(ctx context.Context, form string) ([]PlaceCount, error)
	// Export calls fn for each entry of a form in arrival order, reading
	// ExportPage entries at a time so memory stays constant. The order is
	// that of a Cursor: by journal position, then by id, so that entries
	// sharing a position (decided from two journals, or from a journal
	// begun again) are each exported once, whatever page they fall on.
	Export(ctx context.Context, form string, fn func(Row) error) error
	// DeadLetters lists dead letters, oldest first (by id among equals).
	DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error)
	// ForgetDeadLetter removes a dead-lettered outcome so that the journal
	// entry can be processed again. False if (form, key) is not dead-lettered.
	ForgetDeadLetter(ctx context.Context, form, key string) (bool, error)
	// Erase removes the submitted data of up to limit entries of a form
	// received before the cutoff, oldest first (by id among equals), and
	// everything derived from it that
	// could identify the person: the participant claims (which frees the
	// participant). The rest of each row stays (id, key, status, the
	// keyed receipt) so that a retry is still answered and the audit trail
	// stands. It returns how many it erased; instances running it at once
	// share the work without blocking each other.
	Erase(ctx context.Context, form string, before time.Time, limit int) (int, error)
	// FindEntries lists up to limit entries, of any form, whose data
	// holds one of the needles (byte strings such as a JSON-encoded
	// e-mail address), oldest first (by id among equals).
	FindEntries(ctx context.Context, needles [][]byte, limit int) ([]EntryRef, error)
	// EraseEntries erases the entries with these ids as Erase does, and
	// returns how many still had data. An entry whose pending erasure
	// request it marks done, of a form named in tell, gets in the same
	// transaction an EventErased event carrying the address in the field
	// tell names (none when that field holds no address); nil tell
	// writes no event.
	EraseEntries(ctx context.Context, ids []string, tell NoticeFields) (int, error)
	// RecordArrivals keeps devices' reports on a form's keys, merging them
	// with what earlier reports said; the first report's server time is
	// kept. It adds the batch's refusals (its Refused, and the reports
	// KnownOnly dropped) to the form's count for this hour and returns
	// how many it dropped; it prunes reports and counts older than
	// ArrivalsKept as it goes.
	RecordArrivals(ctx context.Context, form string, b ArrivalBatch, now time.Time) (dropped int, err error)
	// PutSetting stores value under name unless one is there already, and
	// returns the value stored: the first writer wins, across instances.
	PutSetting(ctx context.Context, name string, value []byte) ([]byte, error)
	// PutToken stores a token's hash under a name and says whether it did;
	// with ifAbsent it does so only when the name is new, so that of
	// several instances starting at once (or a restart) exactly one issues
	// the token, decided by the row; without it the token is replaced, its
	// use and revocation forgotten (formd token).
	PutToken(ctx context.Context, name string, hash []byte, ifAbsent bool) (bool, error)
	// TokenValid says whether some stored token has this hash and is not
	// revoked, and marks it used.
	TokenValid(ctx context.Context, hash []byte) (bool, error)
	ConsoleStore
	Close() error
}

// The owner's console reads below: counts, the entries-per-minute chart,
// search, one entry's detail, the arrival rate and the outbox audit. They
// are reads only, bounded (a LIMIT, a time window or a scan bound on top of
// every scan), and served by indexes of migration 0011.

// StatusCounts are a form's entries by status (stored, waitlisted,
// duplicate, rejected, spam, dead-lettered, cancelled).
type StatusCounts map[string]int64

// MinuteCount is how many of a form's entries were received in one minute.
type MinuteCount struct {
	Minute time.Time
	N      int64
}

// EntryDetail is one entry as its detail view shows it: the entry as a
// delivery describes it, and how it was decided.
type EntryDetail struct {
	EntryDoc
	// Decision is the first decision (or the one an owner's not-spam or
	// spam made); Row.Status is where the entry is now.
	Decision  string
	DecidedAt time.Time
	// SameAs is the entry a resend under a new key was answered as.
	SameAs string
}

// ArrivalHour is one hour of a form's arrival rate: what devices reported
// (by the hour the server first heard of a key) and what the server
// received (by the hour it received it).
type ArrivalHour struct {
	Hour time.Time
	// Started counts keys devices reported pressed; Reached those of them
	// the store has an entry for (any outcome).
	Started, Reached int64
	// Received counts entries the server received (from any client);
	// Stored those of them decided stored or waitlisted.
	Received, Stored int64
}

// MaxSearchScan bounds how many entries one search request reads.
const MaxSearchScan = 20000

// SearchNext is the next of SearchEntries, for a search that found
// matches of a page of page rows in the window up to bound (the last
// entry the scan may read; zero when the window ends first): after the
// last match when the page is full; else the whole window up to the bound
// was read, so after the bound, or nowhere.
func SearchNext(matches []Row, page int, bound Cursor) Cursor {
	if len(matches) == page {
		last := matches[len(matches)-1]
		return Cursor{Seq: last.Seq, ID: last.ID}
	}
	return bound
}

// ConsoleStore is what the console and the admin API read beyond the
// decisions.
type ConsoleStore interface {
	// CountByStatus counts a form's entries by status.
	CountByStatus(ctx context.Context, form string) (StatusCounts, error)
	// EntriesPerMinute counts a form's entries received in [since, until)
	// by minute, oldest first; minutes without entries are left out.
	EntriesPerMinute(ctx context.Context, form string, since, until time.Time) ([]MinuteCount, error)
	// SearchEntries is Entries that keeps only entries whose data holds
	// one of the needles, reading at most maxScan entries (at most
	// MaxSearchScan) past q.Before. next is where to go on: the last match
	// of a full page, or the last entry read when the scan bound was hit
	// first; zero when every entry was read.
	SearchEntries(ctx context.Context, q EntryQuery, needles [][]byte, maxScan int) (rows []Row, next Cursor, err error)
	// Entry reads one entry of a form; ErrNotFound.
	Entry(ctx context.Context, form, id string) (EntryDetail, error)
	// ArrivalStats gives a form's arrival rate by hour in [since, until),
	// oldest first; hours with nothing are left out.
	ArrivalStats(ctx context.Context, form string, since, until time.Time) ([]ArrivalHour, error)
	// ArrivalsRefused counts the arrival reports refused in the hours
	// that begin in [since, until).
	ArrivalsRefused(ctx context.Context, form string, since, until time.Time) (int64, error)
	// UnreceivedArrivals lists up to limit keys devices reported pressed
	// in [since, until) (server time of the first report) that the store
	// has no entry for, oldest first.
	UnreceivedArrivals(ctx context.Context, form string, since, until time.Time, limit int) ([]Arrival, error)
	// EntriesWithoutEvent lists up to limit entries of a form ("" for
	// every form) that a decision made (stored, waitlisted, spam, or
	// cancelled since) but whose first event is missing: the outbox rule
	// says the decision writes it in the same transaction.
	EntriesWithoutEvent(ctx context.Context, form string, limit int) ([]EntryRef, error)
}

// TxApplier is a store whose decisions can join a transaction of the
// journal's: the embedded fast path (sqlitestore on the writer it shares
// with the journal, journal.AppendDecider). Shared says whether it has
// that writer; ApplyIn decides as Apply does, in tx, and leaves tx as it
// was when it fails.
type TxApplier interface {
	Shared() bool
	ApplyIn(ctx context.Context, tx *sql.Tx, subs []journal.Entry) ([]Outcome, error)
}
