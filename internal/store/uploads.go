package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
)

// Decisions about the uploads an entry names (a file field's
// "upload:<id>"): the decision claims each for its entry in its own
// transaction, by a unique claim keyed by the upload's id. When an upload
// is claimed by another entry, or is not a complete upload of the entry's
// form, the entry is decided with one of these statuses, which make no
// entry live (no claim, no place, no event), and a retry of its key gets
// the same answer.
const (
	// StatusUploadUsed: an upload the entry names belongs to another entry.
	StatusUploadUsed = "upload-used"
	// StatusUploadMissing: an upload the entry names is not a complete
	// upload of its form (never made, expired, or still uploading).
	StatusUploadMissing = "upload-missing"
	// StatusChallengeInvalid: the entry's proof-of-work solution was
	// spent by another key, on a form that refuses a failed solution
	// (challenge_fallback: refuse). On the other forms such an entry is
	// spam (SpamChallengeReplayed).
	StatusChallengeInvalid = "challenge-invalid"
)

// SpamChallengeReplayed is the spam reason of an entry whose solution
// another key spent.
const SpamChallengeReplayed = "challenge-replayed"

// The codes an upload refusal's Detail names, as intake's per-field
// errors name them (package problem has the public ones).
const (
	UploadNotFound   = "upload-not-found"
	UploadIncomplete = "upload-incomplete"
	UploadUsed       = "upload-already-used"
)

// UploadDetail is an Outcome.Detail: the code and the field.
func UploadDetail(code, field string) string { return code + ":" + field }

// ParseDetail splits an Outcome.Detail into its code and field.
func ParseDetail(d string) (code, field string, ok bool) {
	return strings.Cut(d, ":")
}

// UploadChecks are the uploads a new entry names, as the decision checks
// them: each id with its field. For an entry journaled by a release that
// checked its uploads at intake (no journal.Entry.Uploads), the ids in
// its data with no field (the field is then not checked, nor the expiry,
// which that intake extended).
func UploadChecks(e *journal.Entry) ([]journal.Upload, error) {
	if len(e.Uploads) > 0 {
		return e.Uploads, nil
	}
	ids, err := UploadIDs(e.Data)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	out := make([]journal.Upload, len(ids))
	for i, id := range ids {
		out[i] = journal.Upload{ID: id}
	}
	return out, nil
}

// Upload is one file sent to a form's file field, as the store records it.
type Upload struct {
	ID    string
	Form  string
	Field string
	// Size is the length the upload declared (Upload-Length).
	Size int64
	// Name is the file name the client gave (Upload-Metadata filename),
	// as given: sanitize it before use.
	Name string
	// Type is the MIME type sniffed from the bytes once complete.
	Type string
	// SHA256 is the digest of the bytes once complete.
	SHA256    [32]byte
	Complete  bool
	CreatedAt time.Time
	// ExpiresAt is when an upload no entry claimed is deleted.
	ExpiresAt time.Time
	// Entry is the id of the entry that claimed the upload; "" while
	// unclaimed.
	Entry string
	// Source is the address the upload came from, as its budget counts
	// it (an IPv4 address, an IPv6 /64): see UploadLimits. Recorded, not
	// read back.
	Source string
	// Erased says the entry that claimed it had its data erased
	// (retention, forget): the file is not served any more, from the
	// moment the erasure commits, and its bytes go by the next pass.
	Erased bool
}

// Uploads is what a store driver keeps about uploads, beside the
// decisions that claim them (Apply, for entries whose data lists uploads
// under form.UploadsKey). Every driver has it; storetest.RunUploads pins
// the rules.
type Uploads interface {
	// CreateUpload records a new, incomplete upload.
	CreateUpload(ctx context.Context, u Upload) error
	// CompleteUpload records that every byte of an upload is durable, with
	// its digest and sniffed type. ErrNotFound when there is no such
	// upload.
	CompleteUpload(ctx context.Context, id string, sum [32]byte, typ string) error
	// Upload reads one upload, with the entry that claimed it; ErrNotFound.
	Upload(ctx context.Context, id string) (Upload, error)
	// EntryUploads lists the uploads an entry claimed, in the order its
	// data names them; none for an entry whose data was erased.
	EntryUploads(ctx context.Context, entryID string) ([]Upload, error)
	// ExpiredUploads lists up to limit ids of uploads no entry claimed
	// whose expiry is at or before now, oldest expiry first.
	ExpiredUploads(ctx context.Context, now time.Time, limit int) ([]string, error)
	// DeleteUpload removes an upload's record unless an entry claimed it
	// and queues its bytes' deletion (UploadDeletions), in one
	// transaction, and says whether it did. A claim committed at the same
	// time wins: the record stays.
	DeleteUpload(ctx context.Context, id string) (bool, error)
	// ErasedUploads lists up to limit ids of uploads claimed by entries
	// whose data was erased (retention, forget): their bytes are to go
	// with the data.
	ErasedUploads(ctx context.Context, limit int) ([]string, error)
	// DropErasedUpload removes the claim and the record of an upload
	// whose entry's data was erased and queues its bytes' deletion
	// (UploadDeletions), in one transaction; false when the upload is not
	// such a one.
	DropErasedUpload(ctx context.Context, id string) (bool, error)

	// The rest is in uploadsafety.go and uploadbudget.go.
	UploadHolds
	UploadBudgets
	UploadDeletions
}

// UploadLocker is a store that locks uploads across every instance of a
// deployment, so that an upload continued through any instance is written
// by one request at a time (pgstore: advisory locks). A store without it
// (sqlitestore) serves one instance, whose locks are in memory; with
// --uploads s3 on a store shared by several instances it is required
// (server.openUploads refuses to start without it).
// storetest.RunUploadLocks pins the rules for every driver that has it.
type UploadLocker interface {
	// UploadLocks is the store's one set of upload locks.
	UploadLocks() UploadLocks
}

// UploadLocks are named locks every instance of a deployment sees
// (uploads.CrossLocks is the consumer's view of them).
type UploadLocks interface {
	// TryLock takes the lock name if no other instance holds it, and
	// says whether it did. lost is closed if the lock is lost before
	// Unlock (the connection holding it broke, the store closed).
	TryLock(ctx context.Context, name string) (ok bool, lost <-chan struct{}, err error)
	// Unlock releases a lock TryLock took.
	Unlock(ctx context.Context, name string) error
	// Ask asks the instance that holds the lock name to release it.
	Ask(ctx context.Context, name string) error
	// Asked has f called with the name of each lock another instance
	// asks for (Ask), from then on.
	Asked(f func(name string))
}

// UploadDeletions is the queue of uploads whose bytes are to be deleted.
// The transaction that removes an upload's record (DeleteUpload,
// ExpireUpload, DropErasedUpload) queues the deletion of its bytes, so that a stop
// between the record and the bytes leaves the deletion to the next pass
// rather than bytes nobody knows of; a deletion that fails is recorded
// (attempts, the error) and tried again. Every driver has it (part of
// Uploads); storetest.RunUploads pins it.
type UploadDeletions interface {
	// PendingDeletions lists up to limit queued deletions, those tried
	// fewest times first, then the oldest, so that one that keeps failing
	// does not hold back the others.
	PendingDeletions(ctx context.Context, limit int) ([]UploadDeletion, error)
	// DeletionDone takes an upload off the queue once its bytes are gone.
	DeletionDone(ctx context.Context, id string) error
	// DeletionFailed records a failed attempt at an upload's bytes: one
	// more attempt, the error's text and when.
	DeletionFailed(ctx context.Context, id, reason string, at time.Time) error
}

// UploadDeletion is one queued deletion of an upload's bytes.
type UploadDeletion struct {
	ID       string
	QueuedAt time.Time
	// Attempts counts the failed attempts; LastError and TriedAt are the
	// last one's ("" and the zero time before any).
	Attempts  int
	LastError string
	TriedAt   time.Time
}

// uploadsMember is how form.UploadsKey starts in an entry's data.
var uploadsMember = []byte(`"` + form.UploadsKey + `":`)

// UploadIDs are the ids of the uploads an entry's data names (under
// form.UploadsKey), for the decision that claims them; nil for data
// naming none, which is found without decoding the data.
func UploadIDs(data []byte) ([]string, error) {
	if !bytes.Contains(data, uploadsMember) {
		return nil, nil
	}
	var d struct {
		IDs []string `json:"_uploads"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("read the uploads the entry names: %w", err)
	}
	return d.IDs, nil
}
