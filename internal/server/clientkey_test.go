package server

import (
	"testing"

	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/uploads"
)

// TestSourceKeyIsClientKey: the uploads' budgets and intake's rate limits
// count an address under one key (an IPv4 address, an IPv6 /64); the two
// packages do not import each other, so the server, which wires both,
// pins them together.
func TestSourceKeyIsClientKey(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"192.0.2.7", "::ffff:192.0.2.7", "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::9", "fe80::1%eth0", "not an address", ""} {
		if u, i := uploads.SourceKey(addr), intake.ClientKey(addr); u != i {
			t.Errorf("%q: uploads.SourceKey %q, intake.ClientKey %q", addr, u, i)
		}
	}
}
