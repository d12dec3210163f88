package https_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"golang.org/x/net/dns/dnsmessage"
)

// pebbleBinary is Let's Encrypt's test ACME server, built from its module
// (.ci/run: go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3):
// FORMD_TEST_PEBBLE, or pebble on PATH. Without it the test is skipped,
// unless FORMD_REQUIRE_SERVICES=1 says CI must run it.
func pebbleBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FORMD_TEST_PEBBLE"); p != "" {
		return p
	}
	if p, err := exec.LookPath("pebble"); err == nil {
		return p
	}
	const how = "no pebble: set FORMD_TEST_PEBBLE or put it on PATH (go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3)"
	if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
		t.Fatal("FORMD_REQUIRE_SERVICES=1 and " + how)
	}
	t.Skip(how)
	return ""
}

// serveDNS answers every A question with 127.0.0.1 and every other with
// no records, so that Pebble's validation of any test name reaches this
// machine without /etc/hosts. It speaks DNS over TCP, as Pebble's
// -dnsserver client does, and stops when the test ends.
func serveDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				for {
					var n [2]byte
					if _, err := io.ReadFull(c, n[:]); err != nil {
						return
					}
					msg := make([]byte, int(n[0])<<8|int(n[1]))
					if _, err := io.ReadFull(c, msg); err != nil {
						return
					}
					out, err := answerDNS(msg)
					if err != nil {
						return
					}
					if _, err := c.Write(append([]byte{byte(len(out) >> 8), byte(len(out))}, out...)); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

func answerDNS(msg []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	if q.Type == dnsmessage.TypeA {
		b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}})
	}
	return b.Finish()
}

// handedOut holds the ports freeAddr has given in this test binary: a port
// is closed between its choice and its use (Pebble and formd must know
// each other's ports before either listens), and the kernel may offer a
// just-closed port again, so two choices in a row could otherwise collide.
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: map[string]bool{}}

func freeAddr(t *testing.T) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handedOut.ports[addr] {
			handedOut.ports[addr] = true
			return addr
		}
	}
	t.Fatal("no port that was not handed out already")
	return ""
}

// pebble is a running Pebble.
type pebble struct {
	dir, mgmt string
	client    *http.Client // trusts Pebble's own HTTPS certificate
	stop      func()
}

// startPebble runs Pebble with its API on HTTPS under a certificate of ca,
// validating challenges on formd's ports with names resolved by dns.
func startPebble(t *testing.T, ca *testCA, dns string, httpPort, tlsPort int) *pebble {
	t.Helper()
	bin := pebbleBinary(t)
	dir := t.TempDir()
	cert, key := ca.leaf(t, 7, time.Now().Add(24*time.Hour), "127.0.0.1", "localhost")
	os.WriteFile(filepath.Join(dir, "cert.pem"), cert, 0o600)
	os.WriteFile(filepath.Join(dir, "key.pem"), key, 0o600)
	api, mgmt := freeAddr(t), freeAddr(t)
	conf := map[string]any{"pebble": map[string]any{
		"listenAddress": api, "managementListenAddress": mgmt,
		"certificate": filepath.Join(dir, "cert.pem"), "privateKey": filepath.Join(dir, "key.pem"),
		"httpPort": httpPort, "tlsPort": tlsPort,
		"domainBlocklist": []string{"blocked.formd.test"},
		"keyAlgorithm":    "ecdsa",
		"profiles":        map[string]any{"default": map[string]any{"description": "default", "validityPeriod": 7776000}},
	}}
	raw, _ := json.Marshal(conf)
	os.WriteFile(filepath.Join(dir, "pebble.json"), raw, 0o600)
	cmd := exec.Command(bin, "-config", filepath.Join(dir, "pebble.json"), "-dnsserver", dns)
	// No random pauses before validation, no nonces refused at random:
	// the test is about formd, not about a client's retries.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	logs := &strings.Builder{}
	var mu sync.Mutex
	cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool()}}
	p := &pebble{dir: "https://" + api + "/dir", mgmt: "https://" + mgmt, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			tr.CloseIdleConnections()
			cmd.Process.Kill()
			cmd.Wait()
			mu.Lock()
			t.Logf("pebble:\n%s", logs.String())
			mu.Unlock()
		})
	}
	t.Cleanup(p.stop)
	poll.Until(t, "pebble to serve its directory", 20*time.Second, func() bool {
		resp, err := p.client.Get(p.dir)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// root is the root certificate Pebble issues under (made at its start).
func (p *pebble) root(t *testing.T) *x509.CertPool {
	t.Helper()
	resp, err := p.client.Get(p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("pebble's root: %d %q", resp.StatusCode, b)
	}
	return pool
}

// TestACMEWithPebble: with --tls-domain formd gets a certificate from a
// real ACME server (Pebble, validating the challenge on formd's own
// ports), and a browser-like client that trusts only Pebble's root
// submits, sets up and signs in over HTTP/2 with Secure cookies and HSTS.
// A domain the CA refuses is told in the log and the metrics and does not
// stop the others; restarted with the CA gone, formd serves the
// certificate it has.
func TestACMEWithPebble(t *testing.T) {
	ca := newTestCA(t)
	dns := serveDNS(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o600)
	data := t.TempDir()
	const domain = "forms.formd.test"
	settings := func(c *config.Config) {
		c.Data = data
		c.TLSDomains = []string{domain, "blocked.formd.test"}
		c.ACMECARoots = caFile
		c.ACMEEmail = "owner@example.org"
	}
	// Pebble validates challenges on formd's ports, so it must know them
	// first.
	httpAddr, tlsAddr := freeAddr(t), freeAddr(t)
	httpPort, tlsPort := mustPort(t, httpAddr), mustPort(t, tlsAddr)
	peb := startPebble(t, ca, dns, httpPort, tlsPort)
	r := startListening(t, func(c *config.Config) {
		settings(c)
		c.ACMECA = peb.dir
		c.Addr, c.HTTPAddr = tlsAddr, httpAddr
	})
	metricsURL := "http://" + r.Metrics.Addr().String() + "/metrics"
	expirySeries := `formd_tls_cert_expiry_timestamp_seconds{domain="` + domain + `"}`
	poll.Until(t, "a certificate from pebble", 60*time.Second, func() bool { return scrape(t, metricsURL, expirySeries) > 0 })
	if at := time.Unix(int64(scrape(t, metricsURL, expirySeries)), 0); time.Until(at) < 80*24*time.Hour {
		t.Errorf("certificate expires at %s, want about 90 days from now", at)
	}
	poll.Until(t, "the blocked domain's refusal to be counted", 30*time.Second, func() bool {
		return scrape(t, metricsURL, `formd_tls_cert_errors_total{source="acme"}`) >= 1
	})
	if v := scrape(t, metricsURL, `formd_tls_cert_expiry_timestamp_seconds{domain="blocked.formd.test"}`); v != 0 {
		t.Errorf("blocked domain's expiry %v, want 0 (no certificate)", v)
	}

	roots := peb.root(t)
	base := fmt.Sprintf("https://%s:%d", domain, tlsPort)
	client := tlsClient(t, roots, r.Public.Addr().String())
	resp := submit(t, client, base)
	if resp.ProtoMajor != 2 || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("submission answered over %s with HSTS %q; want HTTP/2 and HSTS", resp.Proto, resp.Header.Get("Strict-Transport-Security"))
	}
	if got := resp.TLS.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != domain {
		t.Errorf("certificate for %v, want [%s]", got, domain)
	}
	if c := sessionCookie(t, setUp(t, client, base, r.s.SetupCode, http.Header{"Origin": {base}})); !c.Secure {
		t.Error("setup: session cookie not Secure")
	}
	form := url.Values{"email": {"owner@example.org"}, "password": {"correct horse battery"}}
	req, _ := http.NewRequest("POST", base+"/admin/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	login, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	login.Body.Close()
	if login.StatusCode != http.StatusSeeOther || !sessionCookie(t, login).Secure {
		t.Errorf("sign-in: %d, want 303 with a Secure session cookie", login.StatusCode)
	}

	// Kept under --data: the account key and certificate, for the owner only.
	err = filepath.Walk(filepath.Join(data, "acme"), func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if want := os.FileMode(0o600); fi.IsDir() {
			want = 0o700 | os.ModeDir
			if fi.Mode() != want {
				return fmt.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
			}
		} else if fi.Mode() != want {
			return fmt.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	// The CA gone: a restart serves the certificate it has.
	r.stop()
	r.stop = nil
	peb.stop()
	client.CloseIdleConnections()
	r = startListening(t, func(c *config.Config) { settings(c); c.ACMECA = peb.dir })
	c2 := tlsClient(t, roots, r.Public.Addr().String())
	resp, err = c2.Get("https://" + domain + port(r.Public) + "/healthz")
	if err != nil {
		t.Fatalf("after a restart without the CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("after a restart without the CA: %d", resp.StatusCode)
	}
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a.Port
}

// TestACMEOverHTTP01: when the CA cannot reach the HTTPS port (the
// TLS-ALPN-01 challenge fails), the certificate comes through the
// HTTP-01 challenge on --http-addr.
func TestACMEOverHTTP01(t *testing.T) {
	ca := newTestCA(t)
	dns := serveDNS(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, ca.pem, 0o600)
	httpAddr, tlsAddr, closed := freeAddr(t), freeAddr(t), freeAddr(t)
	peb := startPebble(t, ca, dns, mustPort(t, httpAddr), mustPort(t, closed))
	const domain = "plain.formd.test"
	r := startListening(t, func(c *config.Config) {
		c.TLSDomains, c.ACMECA, c.ACMECARoots = []string{domain}, peb.dir, caFile
		c.Addr, c.HTTPAddr = tlsAddr, httpAddr
	})
	metricsURL := "http://" + r.Metrics.Addr().String() + "/metrics"
	poll.Until(t, "a certificate from pebble over HTTP-01", 60*time.Second, func() bool {
		return scrape(t, metricsURL, `formd_tls_cert_expiry_timestamp_seconds{domain="`+domain+`"}`) > 0
	})
	client := tlsClient(t, peb.root(t), r.Public.Addr().String())
	if resp := get(t, client, "https://"+domain+port(r.Public)+"/healthz"); resp.StatusCode != 200 {
		t.Fatalf("healthz over the new certificate: %d", resp.StatusCode)
	}
}
