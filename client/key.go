package client

import "crypto/rand"

// NewKey makes an idempotency key: 26 random base32 characters (130
// bits), so that two submissions never share one by chance.
func NewKey() string {
	return rand.Text()
}

// ValidKey reports whether k is a key formd accepts: 1 to 255 visible
// ASCII characters.
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
