package intake

import (
	"net/http"
	"net/netip"
)

// ClientKey is the bucket a client address is counted in, by the rate
// limits and by the adaptive proof-of-work difficulty alike: an IPv4
// address is itself; an IPv6 address is its /64, the smallest network a
// provider hands one subscriber (RFC 6177), so that a client cannot get
// fresh budgets by walking the 2^64 addresses of its own network; an
// IPv4-mapped IPv6 address is the IPv4 address. What is not an address
// (a Unix socket's peer) is counted as itself.
func ClientKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}

// clientKey is the request's ClientKey.
func (h *Handler) clientKey(r *http.Request) string { return ClientKey(h.clientIP(r)) }
