package webhooks

import (
	"net"
	"net/netip"
)

// WithTestNetwork gives a sender a resolver that answers test names, and
// a check that runs after the guard's on every address dialled, so that a
// broken guard fails the test instead of connecting anywhere.
func WithTestNetwork(o Options, r *net.Resolver, beforeConnect func(netip.AddrPort) error) Options {
	o.resolver = r
	o.beforeConnect = beforeConnect
	return o
}

// Control exposes the dialer hook, to test it on addresses no test may
// actually dial.
func (g *Guard) Control(network, address string) error {
	return g.control(network, address, nil)
}
