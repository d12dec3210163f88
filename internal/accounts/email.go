package accounts

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// NormalizeEmail is the one form an e-mail address is stored and looked up
// in: NFKC-normalized, trimmed, lower-case. It refuses text that is not
// plainly an address (one @, something on each side, a dot in the domain,
// no spaces or control characters, at most 254 bytes).
func NormalizeEmail(s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(norm.NFKC.String(s)))
	local, domain, ok := strings.Cut(e, "@")
	bad := !ok || local == "" || domain == "" || strings.Contains(domain, "@") || len(e) > 254 ||
		!strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.IndexFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
	if bad {
		return "", fmt.Errorf("%w: %q", ErrInvalidEmail, s)
	}
	return e, nil
}
