package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// SecretPrefix starts every Standard Webhooks secret, so that a secret
// pasted into the wrong place is recognisable.
const SecretPrefix = "whsec_"

// The bounds of a decoded secret: 24 bytes (192 bits) is what the
// Standard Webhooks examples use and is plenty for HMAC-SHA256; more than
// 64 bytes would be hashed down by HMAC anyway.
const (
	minSecretBytes = 24
	maxSecretBytes = 64
	newSecretBytes = 32
)

// validSecret describes a valid secret in every ParseSecret error, so the
// person fixing the setting knows what to write.
const validSecret = `a valid secret is "whsec_" followed by 24 to 64 random bytes in standard base64`

// Secret is a parsed signing secret. Its key never leaves the package:
// printing or logging a Secret shows only that it is redacted, so that a
// delivery log or an error message cannot leak it.
type Secret struct {
	key []byte
}

// ParseSecret reads a "whsec_" secret as written in a form's notify
// settings. Its errors wrap ErrInvalidSecret, say what is wrong and never
// repeat the secret.
func ParseSecret(s string) (Secret, error) {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	switch {
	case s == "":
		return Secret{}, fmt.Errorf("parse secret: %w: it is empty; %s", ErrInvalidSecret, validSecret)
	case !ok:
		return Secret{}, fmt.Errorf("parse secret: %w: it does not start with %q; %s", ErrInvalidSecret, SecretPrefix, validSecret)
	case strings.TrimSpace(rest) != rest:
		return Secret{}, fmt.Errorf("parse secret: %w: it has spaces or a line break around it; %s", ErrInvalidSecret, validSecret)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		var at base64.CorruptInputError
		if errors.As(err, &at) {
			// The offset points at the mistake without showing the key.
			return Secret{}, fmt.Errorf("parse secret: %w: not standard base64 at character %d after %q; %s", ErrInvalidSecret, int64(at)+1, SecretPrefix, validSecret)
		}
		return Secret{}, fmt.Errorf("parse secret: %w: not standard base64; %s", ErrInvalidSecret, validSecret)
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return Secret{}, fmt.Errorf("parse secret: %w: it decodes to %d bytes; %s", ErrInvalidSecret, len(key), validSecret)
	}
	return Secret{key: key}, nil
}

// NewSecret makes a fresh secret of 32 random bytes, for the CLI and the
// docs to hand to an owner setting up a receiver.
func NewSecret() string {
	key := make([]byte, newSecretBytes)
	// crypto/rand.Read never fails on the platforms Go supports; it
	// crashes the program rather than return predictable bytes.
	_, _ = rand.Read(key)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// IsZero reports whether s was never parsed; such a secret signs nothing.
func (s Secret) IsZero() bool { return len(s.key) == 0 }

// String hides the key, so that a Secret in a log line or an error is
// harmless.
func (s Secret) String() string {
	if s.IsZero() {
		return SecretPrefix + "(none)"
	}
	return SecretPrefix + "(redacted)"
}

// Format hides the key for every verb, including %#v and %x, which would
// otherwise print the struct's bytes.
func (s Secret) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte(s.String()))
}

// LogValue hides the key from log/slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

var (
	_ slog.LogValuer = Secret{}
	_ fmt.Formatter  = Secret{}
	_ fmt.Stringer   = Secret{}
)
