package accounts

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
)

// Password length rules, the one place they are written: the server
// checks them here and the console's pages (both languages, and the
// browser's minlength) print MinPasswordLength from here. Twelve is what
// the setup page always promised, so no one who set up through it has a
// shorter password, and it is the point past which guessing online,
// slowed per account and address and by a 64 MiB hash, is hopeless even
// for passwords of words; NIST SP 800-63B asks at least 8 (15 when the
// password is the only factor, which would refuse the pass-phrases people
// already use here). Existing hashes keep working: the rule applies to
// new passwords only. The maximum only keeps a request from making the
// server hash megabytes.
const (
	MinPasswordLength = 12   // characters
	MaxPasswordLength = 1024 // bytes
)

// Params are argon2id's cost settings.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
}

// DefaultParams suit a small server of 2 cores: 64 MiB, one pass, two
// lanes (more memory than OWASP's 46 MiB, one pass, minimum). One hash
// took 40–60 ms on a 2-core AMD EPYC VM (BenchmarkHashPassword; up to
// ~130 ms while the machine was busy). The Service hashes at most
// Config.HashSlots passwords at a time (2), so a burst of sign-ins
// queues instead of taking 64 MiB each.
var DefaultParams = Params{Memory: 64 * 1024, Time: 1, Threads: 2}

const (
	saltLen = 16
	keyLen  = 32
)

// CheckPassword says whether a new password is acceptable.
func CheckPassword(password string) error {
	if len(password) > MaxPasswordLength {
		return ErrPasswordTooLong
	}
	if utf8.RuneCountInString(norm.NFKC.String(password)) < MinPasswordLength {
		return ErrPasswordTooShort
	}
	return nil
}

// HashPassword hashes a password with argon2id and a fresh salt, as a PHC
// string: $argon2id$v=19$m=65536,t=1,p=2$salt$hash. The password is
// NFKC-normalized first, so that the same characters typed on another
// keyboard match.
func HashPassword(password string, p Params) (string, error) {
	if err := CheckPassword(password); err != nil {
		return "", err
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argon2.IDKey([]byte(norm.NFKC.String(password)), salt, p.Time, p.Memory, p.Threads, keyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// errBadHash means a stored hash this package cannot read.
var errBadHash = errors.New("not an argon2id PHC string")

// parseHash reads a PHC string made by HashPassword.
func parseHash(phc string) (p Params, salt, key []byte, err error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, errBadHash
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return p, nil, nil, fmt.Errorf("%w: version %q", errBadHash, parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil || p.Memory == 0 || p.Time == 0 || p.Threads == 0 {
		return p, nil, nil, fmt.Errorf("%w: parameters %q", errBadHash, parts[3])
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil {
		return p, nil, nil, fmt.Errorf("%w: salt: %w", errBadHash, err)
	}
	if key, err = b64.DecodeString(parts[5]); err != nil || len(key) == 0 {
		return p, nil, nil, fmt.Errorf("%w: hash", errBadHash)
	}
	return p, salt, key, nil
}

// VerifyPassword says whether password matches the PHC string, comparing
// in constant time. An unreadable hash is an error, never a match.
func VerifyPassword(phc, password string) (bool, error) {
	p, salt, key, err := parseHash(phc)
	if err != nil {
		return false, fmt.Errorf("verify password: %w", err)
	}
	if len(password) > MaxPasswordLength {
		return false, nil
	}
	got := argon2.IDKey([]byte(norm.NFKC.String(password)), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// NeedsRehash says whether a stored hash was made with other parameters
// than p (or a different hash length), so that it should be replaced the
// next time its password is known, at sign-in.
func NeedsRehash(phc string, p Params) bool {
	got, salt, key, err := parseHash(phc)
	return err != nil || got != p || len(salt) != saltLen || len(key) != keyLen
}
