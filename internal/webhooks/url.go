package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxURLLength bounds an endpoint URL; longer ones are refused rather
// than stored, logged and sent on every delivery.
const MaxURLLength = 2048

// defaultGuard is the guard ValidateURL checks literal addresses with.
var defaultGuard = NewGuard(nil)

// ValidateURL checks an endpoint URL when a form is saved, so that
// `forms apply` names a mistake at once instead of the delivery log
// filling with refusals later. It is CheckURL on a guard without an
// allow-list; an installation started with --webhook-allow should call
// CheckURL on its own guard instead.
func ValidateURL(raw string) error {
	return defaultGuard.CheckURL(raw)
}

// CheckSyntax checks that raw is an absolute http or https URL with a
// host, no fragment, no user:password and at most MaxURLLength bytes,
// without judging its address (CheckURL does, with a guard).
func CheckSyntax(raw string) error {
	_, err := parseURL(raw)
	return err
}

// CheckURL checks that raw is an absolute http or https URL with a host,
// no fragment, no user:password and at most MaxURLLength bytes, and that
// a host written as an address (or as localhost) is one this guard
// allows. Names are not resolved here: the address a name stands for is
// checked when the sender connects. Errors wrap ErrInvalidURL or are a
// *RefusedAddressError; none repeats the URL, which may hold a token.
func (g *Guard) CheckURL(raw string) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := g.Check(ip); err != nil {
			return fmt.Errorf("check webhook url: %w", err)
		}
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: these names are loopback wherever they resolve.
		if err := g.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1})); err != nil {
			return fmt.Errorf("check webhook url: host %s is loopback: %w", name, err)
		}
		return nil
	}
	if endsInNumber(name) {
		// Resolvers and browsers read "127.1", "2130706433" or
		// "0x7f.0.0.1" as IPv4 addresses; refuse the ambiguity.
		return fmt.Errorf("check webhook url: %w: host looks like an IPv4 address in a short or hexadecimal form; write four decimal numbers such as 203.0.113.7, or a name", ErrInvalidURL)
	}
	return nil
}

// parseURL checks the syntax of an endpoint URL.
func parseURL(raw string) (*url.URL, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("check webhook url: %w: "+format, append([]any{ErrInvalidURL}, args...)...)
	}
	switch {
	case raw == "":
		return nil, bad("it is empty; write an absolute URL such as https://example.org/hooks/formd")
	case len(raw) > MaxURLLength:
		return nil, bad("it is %d bytes long; at most %d", len(raw), MaxURLLength)
	case strings.TrimSpace(raw) != raw:
		return nil, bad("it has spaces or a line break around it")
	case strings.Contains(raw, "#"):
		return nil, bad("it has a fragment (#…), which is never sent to the receiver; remove it")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL; keep only what is wrong with it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, bad("it cannot be parsed: %v", err)
	}
	switch {
	case u.Scheme == "":
		return nil, bad("it is not absolute; write it with https:// or http://")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("scheme %q is not http or https", u.Scheme)
	case u.Opaque != "":
		return nil, bad("write it as %s://host/path", u.Scheme)
	case u.User != nil:
		return nil, bad("it has a user name or password (user:password@), which formd does not send; receivers authenticate deliveries by their signature")
	case u.Hostname() == "":
		return nil, bad("it has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return nil, bad("port %s is not between 1 and 65535", p)
		}
	}
	return u, nil
}

// endsInNumber reports whether the last label of a host name is a number
// (decimal, octal or 0x hexadecimal), which the WHATWG URL standard and
// inet_aton read as an IPv4 address.
func endsInNumber(name string) bool {
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// Resolver looks a host name up (net.DefaultResolver.LookupNetIP).
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// saveLookup bounds the lookup of CheckSavedURL.
const saveLookup = 3 * time.Second

// CheckSavedURL is CheckURL when a form is saved, with the host name
// looked up too: a name that resolves to an address the guard refuses
// (loopback, a private network) is refused now, with the form, rather
// than only when the sender connects (that check stays: a name may
// resolve elsewhere later). A name that cannot be looked up now is
// taken, and judged at send time. resolve is nil for the system's.
func (g *Guard) CheckSavedURL(raw string, resolve Resolver) error {
	if err := g.CheckURL(raw); err != nil {
		return err
	}
	u, _ := parseURL(raw) // CheckURL parsed it
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveLookup)
	defer cancel()
	addrs, err := resolve(ctx, host)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := g.Check(a.Unmap()); err != nil {
			return fmt.Errorf("check webhook url: host %s resolves to %s: %w", host, a, err)
		}
	}
	return nil
}
