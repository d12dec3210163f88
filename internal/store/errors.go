package store

// Errors the drivers return; callers test with errors.Is. Each names the
// problem code (package problem) that an HTTP answer gives for it.
var (
	// ErrNotFound means no entry has that id on that form.
	ErrNotFound error = &codedError{"entry not found", "entry-not-found"}
	// ErrNotLive means the entry exists but is neither stored nor
	// waitlisted, so it cannot be cancelled.
	ErrNotLive error = &codedError{"entry is not stored or waitlisted", "entry-not-live"}
	// ErrNotSpam means the entry is not classed as spam (or its data was
	// erased), so it cannot be decided again as a real submission.
	ErrNotSpam error = &codedError{"entry is not spam with its data", "entry-not-spam"}
	// ErrUnavailable marks a failure of the store itself (connection lost,
	// database locked or full) rather than of the submissions in hand: the
	// processor retries the same batch with backoff and counts no attempt
	// against the entries; a request is answered 503 store-unavailable.
	ErrUnavailable error = &codedError{"store unavailable", "store-unavailable"}
	// ErrUploadNotFound means no upload has that id (never made, or
	// expired and deleted).
	ErrUploadNotFound error = &codedError{"upload not found", "upload-not-found"}
)

// codedError is a sentinel that names its problem code.
type codedError struct{ msg, code string }

func (e *codedError) Error() string { return e.msg }

// ProblemCode is the problem code an HTTP answer gives for the error.
func (e *codedError) ProblemCode() string { return e.code }
