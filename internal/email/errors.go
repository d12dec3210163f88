package email

import (
	"context"
	"errors"
	"fmt"
)

// Errors the package returns; callers test with errors.Is.
var (
	// ErrInvalidSetting means --smtp or --smtp-from cannot be used: the
	// message says which setting, what is wrong and what would be valid,
	// so that formd can refuse to start with it.
	ErrInvalidSetting = errors.New("invalid setting")
	// ErrInvalidMessage means a Message cannot be sent as it is (no
	// recipient, a malformed address or Message-ID, a forbidden header).
	// Sending it again cannot help, so IsPermanent reports it.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrUnknownKind means Render was asked for a kind of mail it has no
	// template for.
	ErrUnknownKind = errors.New("unknown kind of mail")
	// ErrViewType means the view given to Render is not the one its kind
	// needs (EntryView for Entry, and so on).
	ErrViewType = errors.New("view does not match the kind of mail")
	// ErrUnknownStatus means a confirmation was asked for a status that
	// cannot be told to the person truthfully (only stored, waitlisted,
	// promoted and cancelled can).
	ErrUnknownStatus = errors.New("no confirmation for this status")
)

// Error is a failed Send. It carries what the outbox dispatcher needs to
// decide between a retry and a dead letter, without parsing text. Its
// text may quote a recipient's address (go-mail and many servers name the
// recipient they refused): treat it as personal data when logging.
type Error struct {
	// Op is the step that failed: "connect" (dial, greeting, EHLO,
	// STARTTLS, AUTH), "send" (MAIL FROM, RCPT TO, DATA) or "message"
	// (the Message itself was refused before any connection).
	Op string
	// Code is the SMTP reply code, such as 550 or 451; 0 when the server
	// gave none (a network error, a timeout, a TLS failure).
	Code int
	// Permanent is true when the same Send would fail the same way: a 5xx
	// reply, a refused recipient, an invalid Message.
	Permanent bool
	// Recipient is true when the server refused a recipient (its reply to
	// RCPT TO), not the session: the next message, to someone else, may
	// well pass.
	Recipient bool
	// Err is the underlying error.
	Err error
}

// Error reads as "smtp <op>: <cause>", in the house's wrapped style.
func (e *Error) Error() string {
	return fmt.Sprintf("smtp %s: %v", e.Op, e.Err)
}

// Unwrap gives errors.Is and errors.As the cause, such as
// context.Canceled or ErrInvalidMessage.
func (e *Error) Unwrap() error { return e.Err }

// IsPermanent reports whether err is a Send failure that retrying cannot
// fix: the server answered 5xx (for example 550 to RCPT TO: no such
// mailbox), or the Message was invalid. Everything else — connection
// refused, timeouts, TLS trouble, 4xx replies, a cancelled context — is
// transient and worth a retry under the outbox's rules.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// IsTransport reports whether err is a failure of the SMTP server as a
// whole or of the way to it — connecting, TLS, the greeting, EHLO, AUTH, a
// timeout, a 4xx such as 421 to the session — rather than of one message
// or one recipient: the next message would most likely meet it too, so
// it is what a circuit breaker counts. A cancelled Send (formd stopping)
// is none of these.
func IsTransport(err error) bool {
	var e *Error
	if !errors.As(err, &e) || errors.Is(err, context.Canceled) {
		return false
	}
	switch e.Op {
	case "connect":
		return true
	case "send":
		return !e.Recipient && !e.Permanent
	}
	return false
}
