package store

import "github.com/formd/formd/internal/problem"

// Errors the drivers return; callers test with errors.Is. Each names the
// problem code (package problem) that an HTTP answer gives for it.
var (
	// ErrNotFound means no entry has that id on that form.
	ErrNotFound error = problem.Sentinel("entry not found", problem.CodeEntryNotFound)
	// ErrNotLive means the entry exists but is neither stored nor
	// waitlisted, so it cannot be cancelled.
	ErrNotLive error = problem.Sentinel("entry is not stored or waitlisted", problem.CodeEntryNotLive)
	// ErrNotSpam means the entry is not classed as spam (or its data was
	// erased), so it cannot be decided again as a real submission.
	ErrNotSpam error = problem.Sentinel("entry is not spam with its data", problem.CodeEntryNotSpam)
	// ErrNotPending means the entry was approved or declined already, or
	// never waited for review: nothing changed.
	ErrNotPending error = problem.Sentinel("entry is not pending review", problem.CodeEntryNotPending)
	// ErrUnavailable marks a failure of the store itself (connection lost,
	// database locked or full) rather than of the submissions in hand: the
	// processor retries the same batch with backoff and counts no attempt
	// against the entries; a request is answered 503 store-unavailable.
	ErrUnavailable error = problem.Sentinel("store unavailable", problem.CodeStoreUnavailable)
	// ErrUploadNotFound means no upload has that id (never made, or
	// expired and deleted).
	ErrUploadNotFound error = problem.Sentinel("upload not found", problem.CodeUploadNotFound)
)
