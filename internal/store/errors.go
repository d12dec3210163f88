package store

import "errors"

// Errors the drivers return; callers test with errors.Is.
var (
	// ErrNotFound means no entry has that id on that form.
	ErrNotFound = errors.New("entry not found")
	// ErrNotLive means the entry exists but is neither stored nor
	// waitlisted, so it cannot be cancelled.
	ErrNotLive = errors.New("entry is not stored or waitlisted")
)

// ErrUnavailable marks a failure of the store itself (connection lost,
// database locked or full) rather than of the submissions in hand: the
// processor retries the same batch with backoff and counts no attempt
// against the entries.
var ErrUnavailable = errors.New("store unavailable")
