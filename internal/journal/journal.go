// Package journal is formd's write-ahead log of accepted submissions: the
// queue that absorbs peaks between intake and processor, the backup that
// replay reads, and the evidence that audit compares with the store.
//
// The Journal interface is the contract every driver meets (sqlitejournal,
// natsjournal); journaltest checks it. Intake and processor each depend only
// on the few methods they call. What a driver may lack is a small interface
// of its own below (Pruner, Forgetter, Writability, FormCounter, OutcomeBus,
// LaxDurability, Liveness, Sizer, AppendDecider), found by a type assertion to that interface and checked
// by journaltest on every driver that has it.
package journal

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// DefaultQueueSize is how many appends may wait for a journal's writer
// (or its publisher) before new ones are refused as overloaded, when the
// setting (--queue-size) does not say.
const DefaultQueueSize = 16384

// Entry is one accepted submission as the journal keeps it. Everything the
// processor needs to decide its outcome is here, so that the store can be
// rebuilt from the journal alone.
type Entry struct {
	// Seq is the journal's position for the entry, assigned on append and
	// increasing in arrival order. It is 0 before the append.
	Seq uint64
	// ID is the submission's id, fixed at intake so that a replay gives the
	// same id.
	ID   string
	Site string
	Form string
	// Key is the idempotency key, given by the client or derived from the
	// fingerprint.
	Key         string
	Fingerprint [32]byte
	// Digest is the keyed hash of the request's values as sent, before
	// validation (form.Hasher.Digest): a retry of the key is recognised by
	// it even after the form's definition changed. Zero for entries
	// journaled before it existed.
	Digest     [32]byte
	ReceivedAt time.Time
	// Spam is set when intake's spam checks (honeypot, minimum time) fired;
	// the entry is kept as evidence and stored with status spam.
	Spam bool
	// Claims are the participant's unique-set tokens (see form.Accepted).
	Claims []string
	// Data is the normalized values as a JSON object.
	Data json.RawMessage
	// Waiter is the instance holding the request that waits for the
	// outcome (the server's instance id), empty when none waits. The
	// decider announces the outcome to that instance only (OutcomeBus).
	Waiter string
	// SpamReason says which of intake's spam checks fired (honeypot,
	// min-seconds, a challenge-… reason), "" for none or for entries
	// journaled before it was kept here; the decision records it.
	SpamReason string
	// Challenge is the proof-of-work solution intake verified (its
	// signature, expiry and form binding) for a form that asks for one;
	// the decision spends it (DESIGN invariant 12). Nil for forms without
	// a challenge, for an entry whose solution failed at intake, and for
	// entries journaled by releases that spent it at intake.
	Challenge *Challenge
	// Uploads are the uploads the entry's file fields name, with their
	// fields, for the decision that checks and claims them (their ids are
	// also in Data under form.UploadsKey). Nil for entries journaled by
	// releases that checked them at intake: the decision then claims the
	// ids in Data, checking only the form.
	Uploads []Upload
	// Handouts counts how often the journal has handed the entry to a
	// consumer, 1 the first time; a driver that restarts counts from 1
	// again. (Not the outbox's deliveries, which are webhooks and e-mail.)
	Handouts int
}

// Challenge is a verified proof-of-work solution an entry carries.
type Challenge struct {
	Signature string    `json:"sig"`
	Expires   time.Time `json:"exp"`
	// Refuse says the form refuses a failed solution
	// (challenge_fallback: refuse): a solution another key spent decides
	// the entry as challenge-invalid rather than spam.
	Refuse bool `json:"refuse,omitempty"`
}

// Upload is one upload an entry names: its id and the field naming it.
type Upload struct {
	ID    string `json:"id"`
	Field string `json:"field"`
	// Posted is set for a file of a plain HTML post: intake kept its
	// bytes and made no record of it (DESIGN invariant 12), and the
	// decision records the upload with these facts and claims it in one
	// transaction.
	Posted *Posted `json:"posted,omitempty"`
}

// Posted is what intake learned of a posted file while keeping its bytes.
type Posted struct {
	Size int64 `json:"size"`
	// SHA256 is the digest of the bytes kept, in hex.
	SHA256 string `json:"sha256"`
	// Type is the MIME type sniffed from the bytes.
	Type string `json:"type"`
	// Name is the file name the browser gave, sanitised.
	Name string `json:"name,omitempty"`
	// Expires is when the upload expires if no entry claims it (an entry
	// the decision refuses leaves it unclaimed).
	Expires time.Time `json:"expires"`
}

// Sum is p.SHA256 as bytes; an error if it is not a SHA-256 in hex.
func (p *Posted) Sum() ([32]byte, error) {
	var sum [32]byte
	b, err := hex.DecodeString(p.SHA256)
	if err != nil || len(b) != len(sum) {
		return sum, fmt.Errorf("posted file: %q is not a SHA-256", p.SHA256)
	}
	copy(sum[:], b)
	return sum, nil
}

// Checks is how a driver that keeps one column (or member) for them
// encodes an entry's SpamReason, Challenge and Uploads: nil when the
// entry has none.
func Checks(e Entry) []byte {
	if e.SpamReason == "" && e.Challenge == nil && len(e.Uploads) == 0 {
		return nil
	}
	b, _ := json.Marshal(checks{Spam: e.SpamReason, Challenge: e.Challenge, Uploads: e.Uploads}) //nolint:errchkjson // plain strings and times
	return b
}

// SetChecks decodes what Checks encoded into e; empty b sets nothing.
func SetChecks(e *Entry, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var c checks
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	e.SpamReason, e.Challenge, e.Uploads = c.Spam, c.Challenge, c.Uploads
	return nil
}

type checks struct {
	Spam      string     `json:"spam,omitempty"`
	Challenge *Challenge `json:"challenge,omitempty"`
	Uploads   []Upload   `json:"uploads,omitempty"`
}

// Appended is the outcome of an append.
type Appended struct {
	// Entry is the entry now in the journal for (form, key): the one just
	// appended or, when Duplicate, the one appended earlier.
	Entry Entry
	// Duplicate says an entry with the same (form, key) was already there;
	// nothing new was written.
	Duplicate bool
}

// Filter selects entries for replay. Zero fields match everything.
type Filter struct {
	Form  string
	Site  string
	Since time.Time // received at or after
	Until time.Time // received before
	// AfterSeq skips entries up to and including this position.
	AfterSeq uint64
}

// Stats describe the backlog: entries appended but not yet acknowledged.
type Stats struct {
	Backlog int64
	// OldestPending is when the oldest unacknowledged entry was received,
	// zero when there is none.
	OldestPending time.Time
	LastSeq       uint64
}

// Journal is what a journal driver provides.
//
// Append is durable when it returns without error in sync mode: the entry
// survives kill -9 and, for drivers that fsync, power loss. (form, key) is
// unique: appending it again writes nothing and reports the first entry.
//
// An async Append (sync false, for a form with durability async) returns
// once the entry is queued, before it is durable: a crash, or a write that
// fails (the driver logs it), loses it. Until then the journal that took it
// answers for its key as if it were written: Lookup finds it (with Seq 0
// until it is written) and an Append of the key, async or sync, reports it
// as the first entry, so that a status request or a retry of the key is
// answered as the original. Other instances sharing the journal find it
// once it is written. Close writes what is queued (natsjournal waits for
// it up to its publish timeout).
//
// Fetch hands out entries for processing, each until it is acknowledged
// with Ack; Nak asks for a redelivery after a delay. An entry that is neither
// is delivered again after the driver's redelivery timeout or on restart, so
// processing must be idempotent (the store makes it so).
type Journal interface {
	Append(ctx context.Context, e Entry, sync bool) (Appended, error)
	Fetch(ctx context.Context, max int) ([]Entry, error)
	Ack(ctx context.Context, seqs ...uint64) error
	Nak(ctx context.Context, seq uint64, delay time.Duration) error
	// Lookup finds the entry for (form, key), an async append queued on
	// this journal included.
	Lookup(ctx context.Context, form, key string) (Entry, bool, error)
	// Pending lists delivered entries that have stayed unacknowledged since
	// before the given time, oldest first, for the reconciler.
	Pending(ctx context.Context, deliveredBefore time.Time, limit int) ([]Entry, error)
	// Read calls fn for each entry matching the filter, in journal order.
	Read(ctx context.Context, f Filter, fn func(Entry) error) error
	Stats(ctx context.Context) (Stats, error)
	Close() error
}

// AppendDecider is a journal that can decide sync entries in the
// transaction that appends them: the embedded fast path (sqlitejournal on
// the writer it shares with the store). DecideAtAppend fails when the
// journal has no such writer.
type AppendDecider interface {
	DecideAtAppend(fn Decide) error
}

// Decide decides sync entries in the transaction that appends them. tx is
// on the shared writer, where the store's file is attached. It says which
// entries it decided (their outcomes are in tx) and what to do once tx has
// committed: hand the outcomes to the requests waiting for them. Entries
// it leaves undecided are journaled all the same and delivered to the
// processor, as every entry is without a Decide.
type Decide func(ctx context.Context, tx *sql.Tx, es []Entry) (decided []bool, settled func())

// Pruner is a journal that deletes its copies of a form's old entries once
// they are acknowledged, for retention (sqlitejournal). A journal without
// it keeps entries by its own limits.
type Pruner interface {
	Prune(ctx context.Context, form string, before time.Time, limit int) (int, error)
}

// Forgetter is a journal that deletes one entry's copy so that nothing of
// its data stays, for erasing a person's data on request. An entry not yet
// acknowledged (its outcome not yet in the store) is left alone and
// ErrPending returned: erase it once it is decided. An entry that is not
// there is no error.
type Forgetter interface {
	Forget(ctx context.Context, form, key string) error
}

// Writability is a journal that can tell whether it can take appends now
// (sqlitejournal: the disk full, the file read-only): a server that
// cannot journal must not say it is ready, since every submission would
// be refused.
type Writability interface {
	Writable(ctx context.Context) error
}

// FormCount is what a journal holds of one form: its entries, and those
// of them not yet acknowledged (being processed).
type FormCount struct {
	Entries int64
	// Pending may count, for a journal that only knows an
	// acknowledgement floor (natsjournal), entries above the floor that
	// were acknowledged out of order: it is at most that many.
	Pending int64
}

// FormCounter is a journal that counts one form's entries, for the
// console's live counts (received, processing).
type FormCounter interface {
	CountForm(ctx context.Context, form string) (FormCount, error)
}

// OutcomeBus is a journal that can also carry announcements of decided
// outcomes to the instance whose request waits for them (natsjournal), so
// that it learns of an outcome decided on another instance at once
// instead of at its next poll of the store. Each instance has its own
// subject: an announcement costs only the decider and the waiter, however
// many instances there are. Announcements are at most once and never
// journaled: a lost one costs only that wait, since the poll still finds
// the outcome.
type OutcomeBus interface {
	// PublishOutcomes announces data (the encoded outcomes) to the
	// subscribers of instance.
	PublishOutcomes(instance string, data []byte) error
	// SubscribeOutcomes calls fn with every announcement to instance
	// until stop is called.
	SubscribeOutcomes(instance string, fn func(data []byte)) (stop func(), err error)
	// MaxAnnouncement is the most bytes one announcement carries (NATS's
	// max_payload, which its server sets): a batch's outcomes for one
	// instance are sent in announcements of at most this size.
	MaxAnnouncement() int
}

// LaxDurability is a journal whose durability depends on settings outside
// formd (natsjournal: the stream's replicas, the servers' fsync), checked
// when it opens. A journal without it makes its appends durable by itself
// (sqlitejournal: fsync).
type LaxDurability interface {
	// LaxDurability lists, one sentence each, what makes acknowledged
	// entries losable and what setting would fix it; empty when nothing
	// does. The server exports each as a metric to alert on.
	LaxDurability() []string
}

// Liveness is a journal whose appends go through a writer of its own
// (sqlitejournal: one goroutine that group-commits), which can say that
// writer still turns. A writer stuck in a commit (a disk that hangs, a
// lock held by another program) accepts appends into its queue but makes
// none durable; the server stops its systemd watchdog pings then, so that
// systemd restarts it.
type Liveness interface {
	// Alive returns nil once the writer has answered, or ctx's error if
	// it has not by then.
	Alive(ctx context.Context) error
}

// Sizer is a journal kept in a file of bounded size (sqlitejournal with
// --journal-max-size), which can say how much of that bound it uses, for
// an alert before the bound refuses appends.
type Sizer interface {
	// Size returns the bytes the journal uses, and its bound (0 for none).
	Size(ctx context.Context) (used, limit int64, err error)
}
