package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// checkDomain refuses a --tls-domain name that no ACME CA would issue a
// certificate for over HTTP-01 or TLS-ALPN-01.
func checkDomain(d string) error {
	switch {
	case strings.Contains(d, "*"):
		return fmt.Errorf("%q is a wildcard; an automatic certificate needs each name written out, such as forms.example.org", d)
	case strings.Contains(d, ":") || strings.Contains(d, "/"):
		return fmt.Errorf("%q is not a domain name: write the name alone, such as forms.example.org (the port is --addr's)", d)
	case net.ParseIP(d) != nil:
		return fmt.Errorf("%q is an IP address; --tls-domain needs a domain name that resolves to this machine, such as forms.example.org", d)
	case !strings.Contains(strings.Trim(d, "."), ".") || strings.HasSuffix(d, "."):
		return fmt.Errorf("%q is not a full domain name such as forms.example.org", d)
	}
	for _, r := range d {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return fmt.Errorf("%q is not a domain name: use letters, digits, '-' and '.' (write an international name in its xn-- form)", d)
		}
	}
	return nil
}

// settleTLS checks the HTTPS settings against each other and fills the
// defaults that follow from them: under --tls-domain formd listens on :443
// unless --addr was given, and --public-url defaults to the first domain.
func (c *Config) settleTLS(source map[string]string) error {
	if len(c.TLSDomains) > 0 && (c.TLSCert != "" || c.TLSKey != "") {
		return errors.New("setting tls-domain and tls-cert/tls-key are both set: use --tls-domain (FORMD_TLS_DOMAIN) for certificates obtained automatically, or --tls-cert and --tls-key (FORMD_TLS_CERT, FORMD_TLS_KEY) for a certificate you manage, not both")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("setting tls-cert and tls-key go together: give both --tls-cert (FORMD_TLS_CERT) and --tls-key (FORMD_TLS_KEY), or neither")
	}
	if len(c.TLSDomains) > 0 && source["addr"] == "default" {
		c.Addr = ":443"
	}
	if len(c.TLSDomains) > 0 && c.PublicURL == "" {
		c.PublicURL = "https://" + c.TLSDomains[0]
		if _, port, err := net.SplitHostPort(c.Addr); err == nil && port != "443" {
			c.PublicURL += ":" + port
		}
	}
	return nil
}
