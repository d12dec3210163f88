package journal

// Errors a driver returns so that callers can answer correctly; wrap them
// with context, callers test with errors.Is. Each names the problem code
// (package problem) that an HTTP answer gives for it.
var (
	// ErrOverloaded means the queue in front of the journal is full: nothing
	// was written and the client should retry later (503 overloaded).
	ErrOverloaded error = &codedError{"journal queue is full", "overloaded"}
	// ErrUnavailable means the journal could not write: nothing is known to
	// be durable and the client should retry (503 journal-unavailable).
	ErrUnavailable error = &codedError{"journal unavailable", "journal-unavailable"}
	// ErrClosed means the journal has been closed.
	ErrClosed error = &codedError{"journal closed", "journal-unavailable"}
	// ErrPending means an entry is not acknowledged yet, so it cannot be
	// deleted: its outcome is not in the store.
	ErrPending error = &codedError{"journal entry not yet acknowledged", "entry-pending"}
)

// codedError is a sentinel that names its problem code.
type codedError struct{ msg, code string }

func (e *codedError) Error() string { return e.msg }

// ProblemCode is the problem code an HTTP answer gives for the error.
func (e *codedError) ProblemCode() string { return e.code }
