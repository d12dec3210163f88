// Package ticket is a participant's ticket for the door (DESIGN §4
// "Check-in"): a signed, unguessable id of a stored entry, shown as a QR
// code and as a short code to read out. It names the entry, never its
// data.
//
// Like the participant's link (package entrylink), a ticket is derived,
// not stored: "FT1.<form>.<entry id>.<mac>", where mac is 128 bits of an
// HMAC-SHA-256 of the form and the id under the installation's secret
// (form.Hasher), in its own domain ("formd-ticket"), so a link token is
// never a ticket and a ticket never opens the participant's page. Deriving
// it means a promoted entry has its ticket the moment it is stored, on
// every instance, with nothing written in the decision's transaction;
// whether it is valid now is the entry's status, read at each check-in
// (only stored entries are let in).
//
// The short code is 50 bits of another HMAC (domain "formd-ticket-code"),
// ten characters of Crockford's base32 shown as two groups of five. It is
// not a lookup key: the door resolves it against the form's roster (the
// entries that hold or held a ticket), so the store keeps nothing for it.
// 50 bits make a chance collision within one form of 100,000 entries
// about 1 in 200; a code that matches two entries is refused as
// ambiguous (Match), and the QR code, which carries the whole ticket, is
// unaffected.
package ticket

import (
	"crypto/hmac"
	"encoding/base32"
	"encoding/base64"
	"strings"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// prefix starts every ticket: a version, so that a later format can be
// told apart, and a mark that a scanned text is meant for formd's door.
const prefix = "FT1."

// macLen is the length of a ticket's mac in bytes: 128 bits.
const macLen = 16

// codeLen is the short code's length in characters (5 bits each).
const codeLen = 10

// crockford is Crockford's base32 alphabet: no I, L, O or U, so a code
// read out loud or typed from a screenshot has no look-alikes.
var crockford = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

func mac(h *form.Hasher, domain, formID, id string) [32]byte {
	return h.Sum([]byte(domain + "\x00" + formID + "\x00" + id))
}

// Ticket is the ticket of an entry: what its QR code encodes.
func Ticket(h *form.Hasher, formID, id string) string {
	m := mac(h, "formd-ticket", formID, id)
	return prefix + formID + "." + id + "." + base64.RawURLEncoding.EncodeToString(m[:macLen])
}

// Code is the short code of an entry's ticket, as shown ("ABCDE-FGHJK").
func Code(h *form.Hasher, formID, id string) string {
	m := mac(h, "formd-ticket-code", formID, id)
	s := crockford.EncodeToString(m[:7])[:codeLen]
	return s[:5] + "-" + s[5:]
}

// Parse checks a ticket and returns the form and entry it names; false
// for anything this installation did not give out (forged, altered, a
// participant's link, a short code).
func Parse(h *form.Hasher, t string) (formID, id string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(t), prefix)
	if !ok {
		return "", "", false
	}
	formID, rest, ok = strings.Cut(rest, ".")
	i := strings.LastIndexByte(rest, '.')
	if !ok || i <= 0 || formID == "" {
		return "", "", false
	}
	id, sig := rest[:i], rest[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	m := mac(h, "formd-ticket", formID, id)
	if err != nil || !hmac.Equal(got, m[:macLen]) {
		return "", "", false
	}
	return formID, id, true
}

// IsTicket says whether s has a ticket's shape (it may still be forged):
// the door tells a scanned ticket from a typed code by it.
func IsTicket(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), prefix) }

// NormalizeCode is a typed code as Code shows it: upper case, the look-
// alikes Crockford's base32 folds (O→0, I and L→1) folded, spaces and
// dashes dropped then one dash put back; "" for what cannot be a code.
func NormalizeCode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case ' ', '-', '\t':
			continue
		case 'O':
			r = '0'
		case 'I', 'L':
			r = '1'
		}
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", r) {
			return ""
		}
		b.WriteRune(r)
	}
	c := b.String()
	if len(c) != codeLen {
		return ""
	}
	return c[:5] + "-" + c[5:]
}

// Valid says whether an entry of this status may come in: only a stored
// entry's ticket is valid (waitlisted, pending, cancelled and declined
// entries have none that opens the door; a promoted entry is stored).
func Valid(status string) bool { return status == store.StatusStored }

// Match finds the entry among ids whose ticket has the typed code: its id
// and true when exactly one has it; "" and false when none does or when
// two do (a collision, told apart only by the QR code).
func Match(h *form.Hasher, formID, code string, ids []string) (string, bool) {
	code = NormalizeCode(code)
	if code == "" {
		return "", false
	}
	found := ""
	for _, id := range ids {
		if Code(h, formID, id) == code {
			if found != "" {
				return "", false
			}
			found = id
		}
	}
	return found, found != ""
}
