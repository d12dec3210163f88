package journal

import "github.com/formd/formd/internal/problem"

// Errors a driver returns so that callers can answer correctly; wrap them
// with context, callers test with errors.Is. Each names the problem code
// (package problem) that an HTTP answer gives for it.
var (
	// ErrOverloaded means the queue in front of the journal is full: nothing
	// was written and the client should retry later (503 overloaded).
	ErrOverloaded error = problem.Sentinel("journal queue is full", problem.CodeOverloaded)
	// ErrUnavailable means the journal could not write: nothing is known to
	// be durable and the client should retry (503 journal-unavailable).
	ErrUnavailable error = problem.Sentinel("journal unavailable", problem.CodeJournalUnavailable)
	// ErrClosed means the journal has been closed.
	ErrClosed error = problem.Sentinel("journal closed", problem.CodeJournalUnavailable)
	// ErrPending means an entry is not acknowledged yet, so it cannot be
	// deleted: its outcome is not in the store.
	ErrPending error = problem.Sentinel("journal entry not yet acknowledged", problem.CodeEntryPending)
)
