package webhooks_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/formd/formd/internal/webhooks"
)

// Every class of address that must not be reached from a webhook, in the
// spellings that reach it.
func TestClassifyRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ip, reason string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"169.254.169.254", "cloud metadata"},
		{"fd00:ec2::254", "cloud metadata"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "this network"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"198.18.0.1", "benchmarking"},
		{"192.0.2.1", "documentation"},
		{"2001:db8::1", "documentation"},
		{"fec0::1", "site-local"},
		{"::ffff:127.0.0.1", "loopback, IPv4-mapped"},
		{"::ffff:10.0.0.1", "private, IPv4-mapped"},
		{"::ffff:169.254.169.254", "cloud metadata, IPv4-mapped"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::7f00:1", "loopback, NAT64"},
		{"64:ff9b::a9fe:a9fe", "cloud metadata, NAT64"},
		{"64:ff9b::c0a8:101", "private, NAT64"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:7f00:1::1", "loopback, 6to4"},
		{"2002:a9fe:a9fe::", "cloud metadata, 6to4"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"100::1", "discard-only"},
	} {
		got := webhooks.Classify(netip.MustParseAddr(tc.ip))
		if !strings.Contains(got, tc.reason) {
			t.Errorf("Classify(%s) = %q, want %q", tc.ip, got, tc.reason)
		}
	}
}

// Public addresses, including the neighbours of refused ranges, pass.
// They are classified, never dialled: tests reach only 127.0.0.1.
func TestClassifyPublic(t *testing.T) {
	t.Parallel()
	for _, ip := range []string{
		"8.8.8.8", "1.1.1.1", "93.184.215.14", "11.0.0.1", "223.255.255.255",
		"100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"169.253.255.255", "169.255.0.0", "192.167.255.255", "192.169.0.0",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e",
		"::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	} {
		if got := webhooks.Classify(netip.MustParseAddr(ip)); got != "" {
			t.Errorf("Classify(%s) = %q, want public", ip, got)
		}
		if err := webhooks.NewGuard(nil).Check(netip.MustParseAddr(ip)); err != nil {
			t.Errorf("default guard refused %s: %v", ip, err)
		}
	}
}

func TestGuardAllowList(t *testing.T) {
	t.Parallel()
	g := webhooks.NewGuard([]netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("10.20.0.0/16"),
		netip.MustParsePrefix("169.254.169.254/32"),
	})
	for _, tc := range []struct {
		ip      string
		allowed bool
	}{
		{"127.0.0.1", true},
		{"127.9.9.9", true},
		{"::ffff:127.0.0.1", true},
		{"10.20.3.4", true},
		{"169.254.169.254", true}, // the operator asked for it by name
		{"10.21.0.1", false},
		{"::1", false},
		{"192.168.1.1", false},
		{"169.254.1.1", false},
		{"64:ff9b::7f00:1", false}, // a translator's loopback is not ours
		{"8.8.8.8", true},
	} {
		err := g.Check(netip.MustParseAddr(tc.ip))
		if tc.allowed != (err == nil) {
			t.Errorf("Check(%s) = %v, want allowed=%v", tc.ip, err, tc.allowed)
		}
		if err != nil {
			var refused *webhooks.RefusedAddressError
			if !errors.As(err, &refused) || refused.IP != netip.MustParseAddr(tc.ip) || !errors.Is(err, webhooks.ErrRefusedAddress) {
				t.Errorf("Check(%s) = %#v, want a *RefusedAddressError for it", tc.ip, err)
			}
		}
	}
	var nilGuard *webhooks.Guard
	if nilGuard.Check(netip.MustParseAddr("127.0.0.1")) == nil {
		t.Error("a nil guard allowed loopback")
	}
}

// The dialer hook refuses on the address being dialled, whatever the URL
// said. It is called here directly, because these addresses must never
// be dialled by a test.
func TestControlChecksDialledAddress(t *testing.T) {
	t.Parallel()
	g := webhooks.NewGuard(nil)
	for _, tc := range []struct {
		network, address string
		refused          bool
	}{
		{"tcp4", "127.0.0.1:80", true},
		{"tcp6", "[::1]:443", true},
		{"tcp4", "10.1.2.3:8080", true},
		{"tcp4", "169.254.169.254:80", true},
		{"tcp6", "[::ffff:127.0.0.1]:80", true},
		{"tcp6", "[fd00:ec2::254]:80", true},
		{"tcp6", "[fe80::1%eth0]:80", true},
		{"tcp4", "not an address", true},
		{"tcp4", "93.184.215.14:443", false},
		{"tcp6", "[2606:4700:4700::1111]:443", false},
	} {
		err := g.Control(tc.network, tc.address)
		if tc.refused != errors.Is(err, webhooks.ErrRefusedAddress) {
			t.Errorf("Control(%s, %s) = %v, want refused=%v", tc.network, tc.address, err, tc.refused)
		}
	}
}

func TestParseAllow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "127.0.0.0/8", want: []string{"127.0.0.0/8"}},
		{in: " 127.0.0.0/8 , ::1 ,", want: []string{"127.0.0.0/8", "::1/128"}},
		{in: "10.20.0.5,10.9.8.7/8", want: []string{"10.20.0.5/32", "10.0.0.0/8"}},
		{in: "127.0.0.0/33", wantErr: `"127.0.0.0/33" is not a prefix`},
		{in: "localhost", wantErr: `"localhost" is not an address`},
		{in: "10.0.0.0/8;fd00::/8", wantErr: "is not a prefix"},
	} {
		got, err := webhooks.ParseAllow(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseAllow(%q) = %v, want an error saying %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAllow(%q): %v", tc.in, err)
			continue
		}
		var gotS []string
		for _, p := range got {
			gotS = append(gotS, p.String())
		}
		if !slices.Equal(gotS, tc.want) {
			t.Errorf("ParseAllow(%q) = %v, want %v", tc.in, gotS, tc.want)
		}
	}
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url     string
		want    string // "" for valid, else a part of the message
		refused bool   // a *RefusedAddressError rather than ErrInvalidURL
	}{
		{url: "https://crm.example.org/hooks/formd"},
		{url: "http://crm.example.org:8080/hooks?token=abc"},
		{url: "HTTPS://Example.ORG/"},
		{url: "https://203.0.113.7.nip.io/"}, // a name; its address is checked when dialled
		{url: "https://[2606:4700:4700::1111]/"},
		{url: "https://8.8.8.8/"},
		{url: "", want: "empty"},
		{url: "/hooks/formd", want: "not absolute"},
		{url: "crm.example.org/hooks", want: "not absolute"},
		{url: "ftp://crm.example.org/", want: `scheme "ftp"`},
		{url: "javascript:alert(1)", want: `scheme "javascript"`},
		{url: "http:crm.example.org", want: "write it as http://host/path"},
		{url: "https:///hooks", want: "no host"},
		{url: "https://crm.example.org/#top", want: "fragment"},
		{url: "https://crm.example.org/#", want: "fragment"},
		{url: "https://admin:hunter2@crm.example.org/", want: "user name or password"},
		{url: "https://token@crm.example.org/", want: "user name or password"},
		{url: "https://crm.example.org:0/", want: "port 0"},
		{url: "https://crm.example.org:70000/", want: "port 70000"},
		{url: "https://crm.example.org:http/", want: "cannot be parsed"},
		{url: " https://crm.example.org/", want: "spaces"},
		{url: "https://crm.example.org/\n", want: "spaces"},
		{url: "https://crm.exa mple.org/", want: "cannot be parsed"},
		{url: "https://crm.example.org/" + strings.Repeat("a", 2048), want: "at most 2048"},
		{url: "http://2130706433/", want: "IPv4 address in a short"},
		{url: "http://127.1/", want: "IPv4 address in a short"},
		{url: "http://0x7f.0.0.1/", want: "IPv4 address in a short"},
		{url: "http://0177.0.0.1/", want: "IPv4 address in a short"},
		{url: "http://127.0.0.1:8080/", want: "127.0.0.1 (loopback)", refused: true},
		{url: "http://localhost:8080/", want: "loopback", refused: true},
		{url: "http://LOCALHOST./", want: "loopback", refused: true},
		{url: "http://api.localhost/", want: "loopback", refused: true},
		{url: "http://[::1]/", want: "::1 (loopback)", refused: true},
		{url: "http://10.1.2.3/", want: "private", refused: true},
		{url: "http://169.254.169.254/latest/meta-data/", want: "cloud metadata", refused: true},
		{url: "http://[::ffff:127.0.0.1]/", want: "IPv4-mapped", refused: true},
		{url: "http://[fd00:ec2::254]/", want: "cloud metadata", refused: true},
		{url: "http://[fe80::1%25eth0]/", want: "link-local", refused: true},
		{url: "http://0.0.0.0:8080/", want: "unspecified", refused: true},
	} {
		err := webhooks.ValidateURL(tc.url)
		if tc.want == "" {
			if err != nil {
				t.Errorf("ValidateURL(%q): %v", tc.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateURL(%q) = %v, want an error saying %q", tc.url, err, tc.want)
			continue
		}
		var refused *webhooks.RefusedAddressError
		if got := errors.As(err, &refused); got != tc.refused || got == errors.Is(err, webhooks.ErrInvalidURL) {
			t.Errorf("ValidateURL(%q) = %v: refused=%v, want %v", tc.url, err, got, tc.refused)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ValidateURL(%q) repeats the password: %v", tc.url, err)
		}
	}
}

// With an allow-list, the same literal addresses pass where the operator
// allowed them, and only there.
func TestGuardCheckURL(t *testing.T) {
	t.Parallel()
	g := webhooks.NewGuard(loopbackOnly)
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/hooks", true},
		{"http://localhost:8080/hooks", true},
		{"http://[::ffff:127.0.0.1]:8080/", true},
		{"http://[::1]:8080/", false},
		{"http://10.1.2.3/", false},
		{"http://user:pw@127.0.0.1/", false},
	} {
		if err := g.CheckURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}
