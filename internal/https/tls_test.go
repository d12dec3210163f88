package https_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "formd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a certificate for names (DNS names or IP addresses) with
// a serial number of its own; it returns the certificate and key as PEM.
func (ca *testCA) leaf(t *testing.T, serial int64, notAfter time.Time, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// writeAtomically replaces a file as a careful owner does: a temporary
// file renamed over the old one.
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// running is an instance started the way formd serve starts one:
// Listen on the configured addresses, then ServeOn.
type running struct {
	server.Listeners
	s    *server.Server
	stop func()
}

const tlsForms = `
id: signup
site: club
fields:
  - {name: name, type: text, required: true}
`

func startListening(t *testing.T, mod func(*config.Config)) *running {
	t.Helper()
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Addr, cfg.HTTPAddr, cfg.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.RateLimit.Off = true
	forms := filepath.Join(t.TempDir(), "forms.yaml")
	if err := os.WriteFile(forms, []byte(tlsForms), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Forms = forms
	mod(&cfg)
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	s, err := server.Open(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("open: %v", err)
	}
	ls, err := s.Listen()
	if err != nil {
		s.Close()
		cancel()
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeOn(ctx, ls) }()
	r := &running{Listeners: ls, s: s}
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with an error: %v", err)
		}
	}
	t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
	return r
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// tlsClient trusts roots and sends every connection to addr, whatever
// name the URL has (the names in these tests resolve nowhere).
func tlsClient(t *testing.T, roots *x509.CertPool, addr string) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func port(ln net.Listener) string {
	return ln.Addr().(*net.TCPAddr).AddrPort().String()[len("127.0.0.1"):]
}

func get(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// setUp makes the first account through the setup page, as the owner
// following the printed link does, and returns the answer.
func setUp(t *testing.T, c *http.Client, base, code string, hdr http.Header) *http.Response {
	t.Helper()
	form := url.Values{"code": {code}, "email": {"owner@example.org"}, "password": {"correct horse battery"}}
	req, _ := http.NewRequest("POST", base+"/admin/setup", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("setup: %d, want 303", resp.StatusCode)
	}
	return resp
}

func sessionCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "formd_session" {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", resp.Header["Set-Cookie"])
	return nil
}

// submit posts one registration and wants it stored.
func submit(t *testing.T, c *http.Client, base string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/forms/signup/submissions", strings.NewReader(`{"name":"Ana"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k-1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d, want 201", resp.StatusCode)
	}
	return resp
}

// TestOwnCertificate: with --tls-cert/--tls-key formd speaks HTTPS with
// HTTP/2, sends HSTS, sets Secure cookies, redirects plain HTTP to https
// and serves /metrics only on --metrics-addr, with the certificate's
// expiry. A new pair written over the files is served from the next
// handshake while an open connection keeps working; a bad pair is
// refused, counted, and the pair before stays.
func TestOwnCertificate(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	firstExpiry := time.Now().Add(20 * 24 * time.Hour).Truncate(time.Second)
	c1, k1 := ca.leaf(t, 100, firstExpiry, "forms.example.test")
	writeAtomically(t, certFile, c1)
	writeAtomically(t, keyFile, k1)
	r := startListening(t, func(c *config.Config) {
		c.TLSCert, c.TLSKey, c.TLSCheckEvery = certFile, keyFile, 100*time.Millisecond
	})
	base := "https://forms.example.test" + port(r.Public)
	client := tlsClient(t, ca.pool(), r.Public.Addr().String())

	resp := get(t, client, base+"/healthz")
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2", resp.Proto)
	}
	if h := resp.Header.Get("Strict-Transport-Security"); h != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security %q, want max-age=31536000 (the default 365d)", h)
	}
	if n := resp.TLS.PeerCertificates[0].SerialNumber.Int64(); n != 100 {
		t.Fatalf("served certificate %d, want 100", n)
	}
	submit(t, client, base)
	cookie := sessionCookie(t, setUp(t, client, base, r.s.SetupCode, http.Header{"Origin": {base}}))
	if !cookie.Secure || !cookie.HttpOnly {
		t.Errorf("session cookie Secure=%v HttpOnly=%v, want both under TLS", cookie.Secure, cookie.HttpOnly)
	}

	// Plain HTTP: a permanent redirect to the same path over https, the
	// method kept.
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", "http://forms.example.test"+port(r.HTTP)+"/v1/forms/signup/submissions?x=1", strings.NewReader("{}"))
	req.URL.Host = r.HTTP.Addr().String()
	req.Host = "forms.example.test" + port(r.HTTP)
	rr, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rr.Body.Close()
	if want := base + "/v1/forms/signup/submissions?x=1"; rr.StatusCode != http.StatusPermanentRedirect || rr.Header.Get("Location") != want {
		t.Errorf("plain HTTP: %d to %q, want 308 to %q", rr.StatusCode, rr.Header.Get("Location"), want)
	}

	// /metrics: not on the public address; on the metrics one, with the
	// certificate's expiry.
	if resp := get(t, client, base+"/metrics"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the public address: %d, want 404", resp.StatusCode)
	}
	metricsURL := "http://" + r.Metrics.Addr().String() + "/metrics"
	if v := scrape(t, metricsURL, `formd_tls_cert_expiry_timestamp_seconds{domain="forms.example.test"}`); v != float64(firstExpiry.Unix()) {
		t.Errorf("expiry metric %v, want %d", v, firstExpiry.Unix())
	}

	// A new pair: new handshakes get it, the open connection still works.
	c2, k2 := ca.leaf(t, 200, time.Now().Add(60*24*time.Hour), "forms.example.test")
	writeAtomically(t, certFile, c2)
	writeAtomically(t, keyFile, k2)
	fresh := func() int64 {
		c := tlsClient(t, ca.pool(), r.Public.Addr().String())
		resp := get(t, c, base+"/healthz")
		c.CloseIdleConnections()
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	poll.Until(t, "a new handshake to get the new certificate", 10*time.Second, func() bool { return fresh() == 200 })
	if resp := get(t, client, base+"/healthz"); resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 100 {
		t.Errorf("the connection open before the reload: %d on certificate %d, want 200 on the same connection (100)",
			resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.Int64())
	}

	// A key that does not match: refused, counted, the pair before kept.
	before := scrape(t, metricsURL, `formd_tls_cert_errors_total{source="file"}`)
	_, wrongKey := ca.leaf(t, 300, time.Now().Add(time.Hour), "forms.example.test")
	c3, _ := ca.leaf(t, 301, time.Now().Add(time.Hour), "forms.example.test")
	writeAtomically(t, certFile, c3)
	writeAtomically(t, keyFile, wrongKey)
	poll.Until(t, "the bad pair to be refused and counted", 10*time.Second, func() bool {
		return scrape(t, metricsURL, `formd_tls_cert_errors_total{source="file"}`) > before
	})
	if n := fresh(); n != 200 {
		t.Errorf("after a bad pair: certificate %d served, want the one before (200)", n)
	}
}

// scrape reads one series' value from a /metrics page; -1 if absent.
func scrape(t *testing.T, u, series string) float64 {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// TestBehindTrustedProxy: a request that a trusted proxy forwards with
// X-Forwarded-Proto: https or Forwarded: proto=https counts as HTTPS
// (Secure cookie, HSTS); the same headers from anyone else do not.
func TestBehindTrustedProxy(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		hdr     http.Header
		secure  bool
	}{
		{"trusted, X-Forwarded-Proto", "127.0.0.1/32", http.Header{"X-Forwarded-Proto": {"https"}}, true},
		{"trusted, Forwarded", "127.0.0.0/8", http.Header{"Forwarded": {`for=192.0.2.60;proto=https;by=203.0.113.43`}}, true},
		{"trusted, plain http", "127.0.0.1", http.Header{"X-Forwarded-Proto": {"http"}}, false},
		{"trusted, no header", "127.0.0.1", nil, false},
		{"untrusted peer", "10.0.0.0/8", http.Header{"X-Forwarded-Proto": {"https"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startListening(t, func(c *config.Config) {
				var err error
				if c.TrustedProxies, err = parseProxies(tc.trusted); err != nil {
					t.Fatal(err)
				}
			})
			base := "http://" + r.Public.Addr().String()
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			hdr := http.Header{"Origin": {base}}
			for k, v := range tc.hdr {
				hdr[k] = v
			}
			resp := setUp(t, c, base, r.s.SetupCode, hdr)
			if got := sessionCookie(t, resp).Secure; got != tc.secure {
				t.Errorf("cookie Secure=%v, want %v", got, tc.secure)
			}
			if got := resp.Header.Get("Strict-Transport-Security") != ""; got != tc.secure {
				t.Errorf("HSTS sent: %v, want %v", got, tc.secure)
			}
		})
	}
}

// TestPublicURLMakesCookiesSecure: --public-url https://… says people
// reach formd over https (TLS ends in front), so cookies are Secure.
func TestPublicURLMakesCookiesSecure(t *testing.T) {
	t.Parallel()
	r := startListening(t, func(c *config.Config) { c.PublicURL = "https://forms.example.org" })
	base := "http://" + r.Public.Addr().String()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if !sessionCookie(t, setUp(t, c, base, r.s.SetupCode, http.Header{"Origin": {base}})).Secure {
		t.Error("cookie not Secure with an https public URL")
	}
}

func parseProxies(v string) ([]netip.Prefix, error) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return []netip.Prefix{p}, nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return nil, err
	}
	return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}, nil
}
