package config

import (
	"strings"
	"testing"
	"time"
)

// TestTLSSettings: what the HTTPS settings become together, and what
// each bad combination is told, naming the setting.
func TestTLSSettings(t *testing.T) {
	t.Parallel()
	c, err := load(t, []string{"--tls-domain", "Forms.Example.org, www.example.org"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TLSDomains) != 2 || c.TLSDomains[0] != "forms.example.org" || c.Addr != ":443" || c.HTTPAddr != ":80" ||
		c.PublicURL != "https://forms.example.org" || c.ACMECA != DefaultACMECA || c.HSTS != 365*24*time.Hour || !c.TLS() {
		t.Fatalf("with --tls-domain: %+v", c)
	}
	c, err = load(t, []string{"--tls-domain", "forms.example.org", "--addr", ":8443"}, nil)
	if err != nil || c.Addr != ":8443" || c.PublicURL != "https://forms.example.org:8443" {
		t.Fatalf("--addr given: addr %q, public URL %q, err %v", c.Addr, c.PublicURL, err)
	}
	c, err = load(t, nil, map[string]string{"FORMD_TLS_CERT": "/c.pem", "FORMD_TLS_KEY": "/k.pem", "FORMD_HSTS": "0", "FORMD_METRICS_ADDR": "off"})
	if err != nil || c.Addr != "127.0.0.1:8080" || c.HSTS != 0 || c.MetricsAddr != "" || c.PublicURL != "" || !c.TLS() {
		t.Fatalf("own certificate: %+v, %v", c, err)
	}
	if c := Default(); c.MetricsAddr != "127.0.0.1:9090" || c.TLS() {
		t.Fatalf("default metrics address %q, TLS %v", c.MetricsAddr, c.TLS())
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--tls-domain", "forms.example.org", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, "tls-domain and tls-cert/tls-key are both set"},
		{[]string{"--tls-cert", "c.pem"}, "tls-cert and tls-key go together"},
		{[]string{"--tls-key", "k.pem"}, "tls-cert and tls-key go together"},
		{[]string{"--tls-domain", "*.example.org"}, `setting tls-domain (--tls-domain, FORMD_TLS_DOMAIN; from --tls-domain): "*.example.org" is a wildcard`},
		{[]string{"--tls-domain", "localhost"}, `"localhost" is not a full domain name`},
		{[]string{"--tls-domain", "192.0.2.1"}, "is an IP address"},
		{[]string{"--tls-domain", "forms.example.org:443"}, "the port is --addr's"},
		{[]string{"--tls-domain", "förms.example.org"}, "xn-- form"},
		{[]string{"--acme-ca", "http://ca.example.org/dir"}, "setting acme-ca (--acme-ca, FORMD_ACME_CA"},
		{[]string{"--acme-email", "not an address"}, "setting acme-email"},
		{[]string{"--http-addr", "80"}, "setting http-addr"},
		{[]string{"--metrics-addr", "9090"}, "setting metrics-addr"},
		{[]string{"--hsts", "forever"}, "setting hsts"},
	}
	for _, tc := range bad {
		_, err := load(t, tc.args, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
