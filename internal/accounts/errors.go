package accounts

import (
	"fmt"
	"time"
)

// Errors of this package and of the drivers of its Store; callers test
// with errors.Is. The messages are meant for people; each names the
// problem code (package problem) an HTTP answer gives for it.
var (
	// ErrUnauthenticated means the request carries no valid session or
	// token (missing, unknown, expired, revoked, or the account disabled).
	ErrUnauthenticated = coded("not signed in: sign in, or send Authorization: Bearer <token>", "unauthorized")
	// ErrBadCredentials is the one answer to a failed sign-in, whether the
	// e-mail is unknown, the account disabled or the password wrong.
	ErrBadCredentials = coded("the e-mail or the password is wrong", "invalid-credentials")
	// ErrLocked means too many sign-ins failed; LockedError says until when.
	ErrLocked = coded("too many failed sign-ins", "login-locked")
	// ErrForbidden means the principal's role or sites do not allow it.
	ErrForbidden = coded("not allowed for this account's role or sites", "forbidden")
	// ErrCSRF means a state-changing request from a signed-in browser did
	// not carry the session's CSRF token.
	ErrCSRF = coded("the form is stale or was not sent from this console: reload the page and try again", "csrf-failed")
	// ErrNotFound means no account or token has that id or e-mail.
	ErrNotFound = coded("no such account or token", "account-not-found")
	// ErrEmailTaken means an account already has that e-mail.
	ErrEmailTaken = coded("an account with this e-mail already exists", "email-taken")
	// ErrInvalidEmail means the text is not an e-mail address.
	ErrInvalidEmail = coded("not an e-mail address such as name@example.com", "invalid-account")
	// ErrPasswordTooShort means fewer than MinPasswordLength characters.
	ErrPasswordTooShort = coded(fmt.Sprintf("the password must be at least %d characters long; a few unrelated words make a good one", MinPasswordLength), "invalid-account")
	// ErrPasswordTooLong means more than MaxPasswordLength bytes.
	ErrPasswordTooLong = coded(fmt.Sprintf("the password must be at most %d bytes long", MaxPasswordLength), "invalid-account")
	// ErrInvalidRole means a role other than owner, editor or viewer.
	ErrInvalidRole = coded("not a role", "invalid-account")
	// ErrInvalidSites means a site list that is empty or has a blank name.
	ErrInvalidSites = coded("sites must be * (every site) or a list of site ids", "invalid-account")
	// ErrSetupCode means the setup code is wrong, used or expired.
	ErrSetupCode = coded("the setup link is wrong, used or expired: formd setup-link on the server makes a new one, or use formd users add", "setup-invalid")
	// ErrSetupDone means an account exists, so there is nothing to set up.
	ErrSetupDone = coded("formd is set up already: sign in, or ask an owner for an account", "setup-done")
	// ErrResetInvalid means a password reset link is wrong, used or
	// expired.
	ErrResetInvalid = coded("the password reset link is wrong, used or expired: ask an owner for a new one", "reset-invalid")
	// ErrBusy means every password hashing slot stayed taken for the
	// longest wait: the server is busy signing people in.
	ErrBusy = coded("the server is busy checking passwords: try again in a moment", "overloaded")
	// ErrInvalidTokenName means a token's name is blank or too long.
	ErrInvalidTokenName = coded(fmt.Sprintf("give the token a name of 1 to %d characters that says where it is used", MaxTokenName), "invalid-request")
	// ErrWrongPassword means the current password given to change it is
	// not the account's.
	ErrWrongPassword = coded("the current password is wrong", "invalid-credentials")
	// ErrRevoked means the token was revoked already.
	ErrRevoked = coded("the token is revoked already", "token-revoked")
)

// codedError is a sentinel that names its problem code.
type codedError struct{ msg, code string }

func coded(msg, code string) error { return &codedError{msg, code} }

func (e *codedError) Error() string { return e.msg }

// ProblemCode is the problem code an HTTP answer gives for the error.
func (e *codedError) ProblemCode() string { return e.code }

// LockedError is ErrLocked with the time sign-ins are accepted again.
type LockedError struct {
	Until time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%v: try again after %s", ErrLocked, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// ProblemCode is the problem code an HTTP answer gives for the error.
func (e *LockedError) ProblemCode() string { return "login-locked" }

// RetryAfter is how long from now until sign-ins are accepted again.
func (e *LockedError) RetryAfter(now time.Time) time.Duration {
	return max(e.Until.Sub(now), 0)
}
