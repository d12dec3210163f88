// Package attempt names what one try of a delivery did. One type says it
// for every layer that handles an attempt — the webhook sender that makes
// it, the outbox dispatcher and its circuit breaker that act on it, the
// store's attempt log that keeps it and the metrics that count it — so
// that the word for an outcome is written in one place. It imports nothing
// of formd's, so that the sender (which the form definitions use) may
// depend on it.
package attempt

// Outcome is what one attempt did. The zero value is no outcome, so that
// a forgotten result is never mistaken for a delivery. Its text is what
// the store's attempt log keeps and the metrics label says.
type Outcome string

// The outcomes of an attempt.
const (
	// Delivered: the receiver took it (a 2xx within the timeout, or the
	// SMTP server's 250 after the message). The delivery is done.
	Delivered Outcome = "delivered"
	// Retry: the attempt failed in a way that may pass later (a timeout, a
	// connection error, a 5xx or 429 of a webhook receiver, a 4xx of an
	// SMTP server). The delivery is tried again on its schedule.
	Retry Outcome = "retry"
	// Gone: the webhook receiver answered 410. Its endpoint is switched
	// off.
	Gone Outcome = "gone"
	// Refused: retrying cannot help (an unusable URL or secret, an address
	// the guard refuses, an SMTP server's 5xx for the recipient). The
	// delivery is a dead letter.
	Refused Outcome = "refused"
	// Skipped: there was nothing to send it to, and nothing went wrong —
	// such as a confirmation for an entry that left the optional address
	// empty. The delivery ends without being a dead letter.
	Skipped Outcome = "skipped"
	// Deferred: not tried (no SMTP server is set). It is not logged nor
	// counted against the delivery, which waits.
	Deferred Outcome = "deferred"
)

// String is the outcome's text.
func (o Outcome) String() string {
	if o == "" {
		return "none"
	}
	return string(o)
}
