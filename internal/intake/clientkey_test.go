package intake_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/server/servertest"
)

func TestClientKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, want string }{
		{"198.51.100.7", "198.51.100.7"},
		{"::ffff:198.51.100.7", "198.51.100.7"},
		{"2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"::1", "::/64"},
		{"@", "@"}, // a Unix socket's peer
		{"", ""},
	} {
		if got := intake.ClientKey(tc.addr); got != tc.want {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// Behind a trusted proxy, two IPv6 addresses of one /64 share the form's
// rate limit (a client cannot take a fresh budget from each of its 2^64
// addresses), an address of another /64 has its own, and so do two IPv4
// addresses.
func TestRateLimitPerSlash64(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, `
id: limited
rate_limit: {requests: 2, per: 1h, burst: 2}
fields: [{name: name, type: text}]
`, servertest.Options{Config: func(c *config.Config) {
		c.RateLimit = config.Default().RateLimit
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	}})
	c := servertest.Client()
	n := 0
	post := func(from string) int {
		t.Helper()
		n++
		r := withHeader(jsonReq("limited", fmt.Sprintf("k%d", n), `{"name":"x"}`), "X-Forwarded-For", from)
		res, _ := send(t, c, h.URL, r)
		return res.StatusCode
	}
	for i, tc := range []struct {
		from string
		want int
	}{
		{"2001:db8:1:2::1", 201},
		{"2001:db8:1:2::2", 201},
		{"2001:db8:1:2:abcd::9", 429}, // the /64's third in the hour
		{"2001:db8:1:3::1", 201},      // another /64
		{"198.51.100.7", 201},
		{"198.51.100.8", 201},
		{"198.51.100.8", 201},
		{"198.51.100.8", 429},
	} {
		if got := post(tc.from); got != tc.want {
			t.Fatalf("request %d from %s: %d, want %d", i+1, tc.from, got, tc.want)
		}
	}
}
