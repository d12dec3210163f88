package webhooks

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// Guard decides which addresses webhooks may connect to. By default it
// refuses every address that is not on the public internet (loopback,
// private networks, link-local, cloud metadata, multicast and the like),
// because a form owner who can set a webhook URL must not be able to make
// the server call its own admin API, a database next to it, or the cloud
// provider's metadata service (server-side request forgery).
//
// The check runs on the address actually being dialled, after DNS, so
// that a name which resolves to a public address when the form is saved
// and to 127.0.0.1 when the webhook is sent (DNS rebinding) is still
// refused. The allow-list overrides the refusal, for tests and for
// receivers on the operator's own network.
//
// A nil *Guard refuses like NewGuard(nil). A Guard is safe for concurrent
// use.
type Guard struct {
	allow []netip.Prefix
}

// NewGuard returns a guard that refuses the default classes of address
// except those in allow. Invalid prefixes are ignored; ParseAllow reports
// them when the setting is read.
func NewGuard(allow []netip.Prefix) *Guard {
	g := &Guard{}
	for _, p := range allow {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	return g
}

// ParseAllow reads the allow-list setting: addresses or prefixes
// separated by commas, such as "127.0.0.0/8,10.20.0.5". A bare address
// allows that one address.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				return nil, fmt.Errorf("parse webhook allow-list: %q is not a prefix such as 127.0.0.0/8 or fd12::/64", item)
			}
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("parse webhook allow-list: %q is not an address or a prefix such as 127.0.0.0/8", item)
		}
		out = append(out, netip.PrefixFrom(ip.WithZone(""), ip.BitLen()))
	}
	return out, nil
}

// Check returns nil when webhooks may connect to ip, and a
// *RefusedAddressError when they may not.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.WithZone("")
	if g != nil {
		for _, p := range g.allow {
			// A mapped address reaches the same IPv4 host, so an
			// IPv4 prefix allows it too.
			if p.Contains(ip) || p.Contains(ip.Unmap()) {
				return nil
			}
		}
	}
	if reason := Classify(ip); reason != "" {
		return &RefusedAddressError{IP: ip, Reason: reason}
	}
	return nil
}

// control is the net.Dialer Control hook: it sees the address of each
// connection attempt after DNS and before any packet is sent, which is
// the only point where the check cannot be bypassed by DNS rebinding.
// An address it cannot read is refused, so a surprise fails closed.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("check dialled address %q: %w", address, ErrRefusedAddress)
	}
	return g.Check(ap.Addr())
}

// Classify names the class of ip that the guard refuses by default, or
// returns "" for an address on the public internet. It covers the
// IPv4-mapped, NAT64 and 6to4 spellings of IPv4 addresses, which reach
// the same hosts.
func Classify(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid"
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		if r := classify4(ip.Unmap()); r != "" {
			return r + ", IPv4-mapped"
		}
		return ""
	}
	if ip.Is4() {
		return classify4(ip)
	}
	for _, c := range special6 {
		if !c.p.Contains(ip) {
			continue
		}
		if c.embedded < 0 {
			return c.reason
		}
		// A translator would connect to the IPv4 address inside.
		b := ip.As16()
		v4 := netip.AddrFrom4([4]byte(b[c.embedded : c.embedded+4]))
		if r := classify4(v4); r != "" {
			return r + ", " + c.reason
		}
		return ""
	}
	return ""
}

func classify4(ip netip.Addr) string {
	for _, c := range special4 {
		if c.p.Contains(ip) {
			return c.reason
		}
	}
	return ""
}

type class struct {
	p      netip.Prefix
	reason string
	// embedded is the byte offset of an IPv4 address inside an IPv6
	// prefix, or -1 when the whole prefix is refused.
	embedded int
}

// special4 lists the IPv4 ranges refused by default, the narrowest first
// so that the reason is the most telling one.
var special4 = []class{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata", -1},
	{netip.MustParsePrefix("0.0.0.0/32"), "unspecified", -1},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast", -1},
	{netip.MustParsePrefix("0.0.0.0/8"), "this network", -1},
	{netip.MustParsePrefix("10.0.0.0/8"), "private", -1},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)", -1},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback", -1},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local", -1},
	{netip.MustParsePrefix("172.16.0.0/12"), "private", -1},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments", -1},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation", -1},
	{netip.MustParsePrefix("192.168.0.0/16"), "private", -1},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking", -1},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation", -1},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation", -1},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast", -1},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved", -1},
}

// special6 lists the IPv6 ranges refused by default, the narrowest first.
// IPv4-mapped addresses (::ffff:0:0/96) are handled before this list.
var special6 = []class{
	{netip.MustParsePrefix("::/128"), "unspecified", -1},
	{netip.MustParsePrefix("::1/128"), "loopback", -1},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata", -1},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)", -1},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64", 12},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64", -1},
	{netip.MustParsePrefix("100::/64"), "discard-only", -1},
	{netip.MustParsePrefix("2001::/32"), "Teredo", -1},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation", -1},
	{netip.MustParsePrefix("2002::/16"), "6to4", 2},
	{netip.MustParsePrefix("fc00::/7"), "unique local", -1},
	{netip.MustParsePrefix("fe80::/10"), "link-local", -1},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)", -1},
	{netip.MustParsePrefix("ff00::/8"), "multicast", -1},
}
