// Package entrylink is the participant's private link to their entry
// (DESIGN §4 "The participant's link"): a token that names the entry and
// proves it was given out by this installation.
//
// The token is derived, not stored: "<form>.<entry id>.<mac>", where mac
// is 128 bits of an HMAC-SHA-256 of the form and the id under the
// installation's secret (form.Hasher), in its own domain ("formd-manage").
// Deriving it means the first answer, every retry and every replay of the
// key (rendered again from the stored outcome) carry the same link, on
// every instance, with nothing written in the decision's transaction and
// nothing to lose; the store keeps no token, not even a hash, so a stolen
// store yields no links. What the link opens is checked against the
// store at each use: an entry whose data was erased (forget, retention)
// answers as an unknown link does, which is how a link is revoked today.
// The id it shows is not secret (the status document shows it too); the
// mac is what cannot be guessed.
package entrylink

import (
	"crypto/hmac"
	"encoding/base64"
	"strings"

	"github.com/formd/formd/internal/form"
)

// macLen is the length of the mac in bytes: 128 bits.
const macLen = 16

func mac(h *form.Hasher, formID, id string) []byte {
	sum := h.Sum([]byte("formd-manage\x00" + formID + "\x00" + id))
	return sum[:macLen]
}

// Token is the link token of an entry.
func Token(h *form.Hasher, formID, id string) string {
	return formID + "." + id + "." + base64.RawURLEncoding.EncodeToString(mac(h, formID, id))
}

// Parse checks a token and returns the form and entry it names; false for
// anything this installation did not give out.
func Parse(h *form.Hasher, token string) (formID, id string, ok bool) {
	formID, rest, ok := strings.Cut(token, ".")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 || formID == "" {
		return "", "", false
	}
	id, sig := rest[:i], rest[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(h, formID, id)) {
		return "", "", false
	}
	return formID, id, true
}

// PagePath is the hosted page of a token, the URL a participant is given
// (member manage); APIPath is its JSON twin.
func PagePath(token string) string { return "/e/" + token }

// APIPath is GET /v1/entries/{token}.
func APIPath(token string) string { return "/v1/entries/" + token }
