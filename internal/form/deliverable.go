package form

import (
	"errors"
	"strings"
	"unicode"
)

// MaxEmailRecipients bounds notify.email.to: an owner's mail goes to a
// handful of people, and a list of thousands (one 100 KB To: header) is
// a way to send formd's mail to anyone.
const MaxEmailRecipients = 20

// reservedTLDs are top-level names that never reach a mailbox on the
// internet (RFC 2606, RFC 6761, RFC 6762, RFC 7686, ICANN's .internal).
var reservedTLDs = []string{"localhost", "local", "internal", "invalid", "test", "onion", "arpa"}

// Deliverable says whether mail to an address (already a plain address,
// as validEmail accepts) can go to a mailbox on the internet: a dotted
// domain name of letters, digits and hyphens under a real top-level
// name — not an address literal (a@[127.0.0.1]), an IP address, a single
// label (a@localhost), a reserved name, or a quoted local part. formd
// sends confirmations to what people type, so what it accepts bounds
// where its mail can be made to go.
func Deliverable(addr string) error {
	at := strings.LastIndexByte(addr, '@')
	if at < 1 || at == len(addr)-1 {
		return errors.New("is not an e-mail address")
	}
	local, domain := addr[:at], strings.ToLower(strings.TrimSuffix(addr[at+1:], "."))
	switch {
	case len(addr) > 254 || len(local) > 64:
		return errors.New("is too long for an e-mail address")
	case strings.ContainsAny(local, "\"\\ ()<>[]:;,@") || strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, ".."):
		return errors.New("has a local part mail cannot be delivered to")
	case strings.HasPrefix(domain, "["):
		return errors.New("names an address literal, not a domain: mail is sent to domain names only")
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return errors.New("has no domain such as example.org")
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return errors.New("has a domain that is not a host name")
		}
		for _, r := range l {
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return errors.New("has a domain that is not a host name")
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return errors.New("names an IP address, not a domain: mail is sent to domain names only")
	}
	for _, r := range reservedTLDs {
		if tld == r {
			return errors.New("has a domain that is reserved and receives no mail (." + r + ")")
		}
	}
	return nil
}
