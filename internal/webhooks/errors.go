package webhooks

import (
	"errors"
	"fmt"
	"net/netip"
)

// Errors the package returns, wrapped with what was being done; callers
// test with errors.Is. A Result's Err wraps one of them, so that the
// delivery log can say why an attempt failed without parsing messages.
var (
	// ErrInvalidSecret means a signing secret is not "whsec_" followed by
	// 24 to 64 bytes in standard base64. The message says which part is
	// wrong and never repeats the secret.
	ErrInvalidSecret = errors.New("invalid webhook secret")
	// ErrNoSecret means a request carried no usable secret: an unsigned
	// delivery could not be verified by its receiver, so it is refused
	// rather than sent.
	ErrNoSecret = errors.New("no webhook secret")
	// ErrInvalidURL means an endpoint URL cannot be used as written.
	ErrInvalidURL = errors.New("invalid webhook url")
	// ErrInvalidID means a message id is empty or cannot travel in a
	// header.
	ErrInvalidID = errors.New("invalid webhook id")
	// ErrRefusedAddress is what every *RefusedAddressError matches, for
	// callers that need only the class of failure.
	ErrRefusedAddress = errors.New("refused address")

	// ErrTimeout means the receiver did not answer within the sender's
	// timeout; the attempt may still have reached it, which is why
	// receivers dedupe on webhook-id.
	ErrTimeout = errors.New("no answer within the timeout")
	// ErrStatus means the receiver answered with a status other than 2xx.
	ErrStatus = errors.New("receiver did not answer 2xx")
	// ErrRedirect means the receiver answered with a redirect, which is
	// never followed: the target could be an address the guard refuses,
	// and a signed body must go only where its owner configured it.
	ErrRedirect = errors.New("redirect not followed")
	// ErrGone means the receiver answered 410 Gone: it asks never to be
	// called again, and the caller disables the endpoint.
	ErrGone = errors.New("endpoint is gone")

	// ErrMissingHeader means a delivery lacks webhook-id,
	// webhook-timestamp or webhook-signature.
	ErrMissingHeader = errors.New("missing webhook header")
	// ErrInvalidTimestamp means webhook-timestamp is not Unix seconds.
	ErrInvalidTimestamp = errors.New("invalid webhook timestamp")
	// ErrTimestampOutOfRange means webhook-timestamp is further from now
	// than the tolerance allows, so the delivery may be a replay.
	ErrTimestampOutOfRange = errors.New("webhook timestamp outside the tolerance")
	// ErrNoMatchingSignature means no v1 signature in webhook-signature
	// was made with any of the receiver's secrets over this id,
	// timestamp and body.
	ErrNoMatchingSignature = errors.New("no matching webhook signature")
)

var _ error = (*RefusedAddressError)(nil)

// RefusedAddressError says that the guard refused to connect to IP, and
// why. It is permanent for that address: the sender reports it as
// Refused, because retrying would only be refused again.
type RefusedAddressError struct {
	// IP is the address that was refused: the one being dialled, after
	// DNS, or the literal one in a URL.
	IP netip.Addr
	// Reason names the class of address, such as "loopback" or "cloud
	// metadata".
	Reason string
}

// Error says which address was refused, why, and how an operator allows
// it on purpose.
func (e *RefusedAddressError) Error() string {
	return fmt.Sprintf("refused address %s (%s): webhooks may not reach it unless it is in the allow-list (--webhook-allow)", e.IP, e.Reason)
}

// Unwrap lets errors.Is(err, ErrRefusedAddress) find the class.
func (e *RefusedAddressError) Unwrap() error { return ErrRefusedAddress }
