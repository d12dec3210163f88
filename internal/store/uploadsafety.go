package store

import (
	"context"
	"time"
)

// UploadHolds keeps an upload a journaled entry names from expiring
// before the entry is decided, and lists uploads for `formd audit`.
// Every driver has it (part of Uploads); storetest.RunUploads pins it.
type UploadHolds interface {
	// HoldUpload moves an unclaimed upload's expiry to until, unless it
	// is later already, and says whether the upload is there to hold: an
	// upload that expired and was deleted is not. Intake holds each
	// upload a submission names before acknowledging it, so that the
	// decision, however late, finds it.
	HoldUpload(ctx context.Context, id string, until time.Time) (bool, error)
	// ExpireUpload removes an unclaimed upload's record if its expiry is
	// at or before now and queues its bytes' deletion (UploadDeletions),
	// in one transaction, and says whether it did: a hold or a claim
	// committed meanwhile keeps it.
	ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error)
	// UploadStates lists up to limit uploads with ids after after, in id
	// order, with whether they are complete, claimed and erased.
	UploadStates(ctx context.Context, after string, limit int) ([]UploadState, error)
}

// UploadState is one upload as `formd audit` sees it.
type UploadState struct {
	ID       string
	Complete bool
	// Entry is the entry that claimed it, "" for none.
	Entry string
	// Erased is a claimed upload whose entry's data was erased: its bytes
	// are going or gone.
	Erased bool
}
