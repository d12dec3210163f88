package config

import "testing"

// Addresses are host:port as net.Listen takes them: an IPv6 host in
// brackets, a numeric port.
func TestAddrIsHostPort(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{"127.0.0.1:8080", true}, {":8080", true}, {"[::1]:8080", true}, {"localhost:0", true},
		{"::1:8080", false}, {"127.0.0.1", false}, {"127.0.0.1:http", false}, {"127.0.0.1:70000", false},
	} {
		_, err := load(t, []string{"--addr", c.v}, nil)
		if (err == nil) != c.ok {
			t.Errorf("--addr %s: %v, want ok %v", c.v, err, c.ok)
		}
	}
}
