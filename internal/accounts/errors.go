package accounts

import (
	"errors"
	"fmt"
	"time"
)

// Errors of this package and of the drivers of its Store; callers test
// with errors.Is. The messages are meant for people.
var (
	// ErrUnauthenticated means the request carries no valid session or
	// token (missing, unknown, expired, revoked, or the account disabled).
	ErrUnauthenticated = errors.New("not signed in: sign in, or send Authorization: Bearer <token>")
	// ErrBadCredentials is the one answer to a failed sign-in, whether the
	// e-mail is unknown, the account disabled or the password wrong.
	ErrBadCredentials = errors.New("the e-mail or the password is wrong")
	// ErrLocked means too many sign-ins failed; LockedError says until when.
	ErrLocked = errors.New("too many failed sign-ins")
	// ErrForbidden means the principal's role or sites do not allow it.
	ErrForbidden = errors.New("not allowed for this account's role or sites")
	// ErrCSRF means a state-changing request from a signed-in browser did
	// not carry the session's CSRF token.
	ErrCSRF = errors.New("the form is stale or was not sent from this console: reload the page and try again")
	// ErrNotFound means no account or token has that id or e-mail.
	ErrNotFound = errors.New("no such account or token")
	// ErrEmailTaken means an account already has that e-mail.
	ErrEmailTaken = errors.New("an account with this e-mail already exists")
	// ErrInvalidEmail means the text is not an e-mail address.
	ErrInvalidEmail = errors.New("not an e-mail address such as name@example.com")
	// ErrPasswordTooShort means fewer than MinPasswordLength characters.
	ErrPasswordTooShort = fmt.Errorf("the password must be at least %d characters long; a few unrelated words make a good one", MinPasswordLength)
	// ErrPasswordTooLong means more than MaxPasswordLength bytes.
	ErrPasswordTooLong = fmt.Errorf("the password must be at most %d bytes long", MaxPasswordLength)
	// ErrInvalidRole means a role other than owner, editor or viewer.
	ErrInvalidRole = errors.New("not a role")
	// ErrInvalidSites means a site list that is empty or has a blank name.
	ErrInvalidSites = errors.New("sites must be * (every site) or a list of site ids")
	// ErrSetupCode means the setup code is wrong, used or expired.
	ErrSetupCode = errors.New("the setup link is wrong, used or expired: restart formd for a new one, or use formd users add")
	// ErrSetupDone means an account exists, so there is nothing to set up.
	ErrSetupDone = errors.New("formd is set up already: sign in, or ask an owner for an account")
	// ErrRevoked means the token was revoked already.
	ErrRevoked = errors.New("the token is revoked already")
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

// RetryAfter is how long from now until sign-ins are accepted again.
func (e *LockedError) RetryAfter(now time.Time) time.Duration {
	return max(e.Until.Sub(now), 0)
}
