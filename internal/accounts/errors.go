package accounts

import (
	"fmt"
	"time"

	"github.com/formd/formd/internal/problem"
)

// Errors of this package and of the drivers of its Store; callers test
// with errors.Is. The messages are meant for people; each names the
// problem code (package problem) an HTTP answer gives for it.
var (
	// ErrUnauthenticated means the request carries no valid session or
	// token (missing, unknown, expired, revoked, or the account disabled).
	ErrUnauthenticated = problem.Sentinel("not signed in: sign in, or send Authorization: Bearer <token>", problem.CodeUnauthorized)
	// ErrBadCredentials is the one answer to a failed sign-in, whether the
	// e-mail is unknown, the account disabled or the password wrong.
	ErrBadCredentials = problem.Sentinel("the e-mail or the password is wrong", problem.CodeInvalidCredentials)
	// ErrLocked means too many sign-ins failed; LockedError says until when.
	ErrLocked = problem.Sentinel("too many failed sign-ins", problem.CodeLoginLocked)
	// ErrForbidden means the principal's role or sites do not allow it.
	ErrForbidden = problem.Sentinel("not allowed for this account's role or sites", problem.CodeForbidden)
	// ErrCSRF means a state-changing request from a signed-in browser did
	// not carry the session's CSRF token.
	ErrCSRF = problem.Sentinel("the form is stale or was not sent from this console: reload the page and try again", problem.CodeCSRFFailed)
	// ErrNotFound means no account or token has that id or e-mail.
	ErrNotFound = problem.Sentinel("no such account or token", problem.CodeAccountNotFound)
	// ErrEmailTaken means an account already has that e-mail.
	ErrEmailTaken = problem.Sentinel("an account with this e-mail already exists", problem.CodeEmailTaken)
	// ErrInvalidEmail means the text is not an e-mail address.
	ErrInvalidEmail = problem.Sentinel("not an e-mail address such as name@example.com", problem.CodeInvalidAccount)
	// ErrPasswordTooShort means fewer than MinPasswordLength characters.
	ErrPasswordTooShort = problem.Sentinel(fmt.Sprintf("the password must be at least %d characters long; a few unrelated words make a good one", MinPasswordLength), problem.CodeInvalidAccount)
	// ErrPasswordTooLong means more than MaxPasswordLength bytes.
	ErrPasswordTooLong = problem.Sentinel(fmt.Sprintf("the password must be at most %d bytes long", MaxPasswordLength), problem.CodeInvalidAccount)
	// ErrInvalidRole means a role other than owner, editor or viewer.
	ErrInvalidRole = problem.Sentinel("not a role", problem.CodeInvalidAccount)
	// ErrInvalidSites means a site list that is empty or has a blank name.
	ErrInvalidSites = problem.Sentinel("sites must be * (every site) or a list of site ids", problem.CodeInvalidAccount)
	// ErrSetupCode means the setup code is wrong, used or expired.
	ErrSetupCode = problem.Sentinel("the setup link is wrong, used or expired: formd setup-link on the server makes a new one, or use formd users add", problem.CodeSetupInvalid)
	// ErrSetupDone means an account exists, so there is nothing to set up.
	ErrSetupDone = problem.Sentinel("formd is set up already: sign in, or ask an owner for an account", problem.CodeSetupDone)
	// ErrResetInvalid means a password reset link is wrong, used or
	// expired.
	ErrResetInvalid = problem.Sentinel("the password reset link is wrong, used or expired: ask an owner for a new one", problem.CodeResetInvalid)
	// ErrBusy means every password hashing slot stayed taken for the
	// longest wait: the server is busy signing people in.
	ErrBusy = problem.Sentinel("the server is busy checking passwords: try again in a moment", problem.CodeOverloaded)
	// ErrInvalidTokenName means a token's name is blank or too long.
	ErrInvalidTokenName = problem.Sentinel(fmt.Sprintf("give the token a name of 1 to %d characters that says where it is used", MaxTokenName), problem.CodeInvalidRequest)
	// ErrWrongPassword means the current password given to change it is
	// not the account's.
	ErrWrongPassword = problem.Sentinel("the current password is wrong", problem.CodeInvalidCredentials)
	// ErrRevoked means the token was revoked already.
	ErrRevoked = problem.Sentinel("the token is revoked already", problem.CodeTokenRevoked)
)

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
func (e *LockedError) ProblemCode() string { return problem.CodeLoginLocked }

// RetryAfter is how long from now until sign-ins are accepted again.
func (e *LockedError) RetryAfter(now time.Time) time.Duration {
	return max(e.Until.Sub(now), 0)
}
