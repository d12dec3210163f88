package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers. Header names are case-insensitive; these
// are the spellings the specification uses.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock, as the specification recommends: wide enough for
// clock skew and a slow network, narrow enough that a captured request
// cannot be replayed later.
const DefaultTolerance = 5 * time.Minute

// signatureVersion marks an HMAC-SHA256 signature; the specification
// reserves other prefixes (v1a for asymmetric keys) that Verify skips.
const signatureVersion = "v1"

// Sign returns the value of webhook-signature for one message: a "v1,"
// signature per secret, separated by spaces, so that while a secret is
// being rotated a receiver that knows either the old or the new one can
// verify. Zero secrets are skipped; with none left, Sign returns "".
func Sign(secrets []Secret, id string, ts time.Time, body []byte) string {
	var b strings.Builder
	for _, s := range secrets {
		if s.IsZero() {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(signatureVersion)
		b.WriteByte(',')
		b.WriteString(base64.StdEncoding.EncodeToString(mac(s, id, ts.Unix(), body)))
	}
	return b.String()
}

// mac is the HMAC-SHA256 of the signed content "{id}.{timestamp}.{body}",
// which binds the body to its id and time so that neither can be swapped.
func mac(s Secret, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify checks a delivery as a receiver would: the three headers are
// present, the timestamp is within tolerance of now (DefaultTolerance
// when tolerance is not positive), and some v1 signature matches some
// secret. Tests use it to prove that what Sign makes can be checked the
// way a receiver checks it (examples/webhook-receiver does the same with
// the standard library alone); errors wrap ErrMissingHeader,
// ErrInvalidTimestamp, ErrTimestampOutOfRange or ErrNoMatchingSignature.
func Verify(secrets []Secret, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	id, tsText := h.Get(HeaderID), h.Get(HeaderTimestamp)
	sigs := strings.Join(h.Values(HeaderSignature), " ")
	for _, hv := range [...]struct{ name, value string }{{HeaderID, id}, {HeaderTimestamp, tsText}, {HeaderSignature, sigs}} {
		if strings.TrimSpace(hv.value) == "" {
			return fmt.Errorf("verify webhook: %w: %s", ErrMissingHeader, hv.name)
		}
	}
	unix, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("verify webhook: %w: want Unix seconds", ErrInvalidTimestamp)
	}
	// Compare with bounds rather than a difference, so that a timestamp
	// near the ends of int64 cannot overflow into an accepted one.
	tol := int64(tolerance / time.Second)
	if unix < now.Unix()-tol || unix > now.Unix()+tol {
		return fmt.Errorf("verify webhook: %w of %s", ErrTimestampOutOfRange, tolerance)
	}
	for _, sig := range strings.Fields(sigs) {
		version, encoded, ok := strings.Cut(sig, ",")
		if !ok || version != signatureVersion {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			continue
		}
		for _, s := range secrets {
			if !s.IsZero() && hmac.Equal(got, mac(s, id, unix, body)) {
				return nil
			}
		}
	}
	return fmt.Errorf("verify webhook: %w", ErrNoMatchingSignature)
}
