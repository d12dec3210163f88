package journal

import "errors"

// Errors a driver returns so that callers can answer correctly; wrap them
// with context, callers test with errors.Is.
var (
	// ErrOverloaded means the queue in front of the journal is full: nothing
	// was written and the client should retry later (503 overloaded).
	ErrOverloaded = errors.New("journal queue is full")
	// ErrUnavailable means the journal could not write: nothing is known to
	// be durable and the client should retry (503 journal-unavailable).
	ErrUnavailable = errors.New("journal unavailable")
	// ErrClosed means the journal has been closed.
	ErrClosed = errors.New("journal closed")
)
