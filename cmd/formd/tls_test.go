package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
)

// selfSigned is a certificate and its key, as PEM.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// TestTLSErrorsAtStart: each bad HTTPS setting stops formd serve at start
// with a message that names the setting.
func TestTLSErrorsAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c1, k1 := selfSigned(t, "forms.example.org")
	_, k2 := selfSigned(t, "forms.example.org")
	cert, key, otherKey := write("cert.pem", c1), write("key.pem", k1), write("other-key.pem", k2)
	garbage := write("garbage.pem", []byte("not a certificate\n"))
	broken := write("broken.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("no DER here")}))
	serve := func(data string, more ...string) []string {
		return append([]string{"serve", "--data", filepath.Join(dir, data), "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--http-addr", "off"}, more...)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{serve("a", "--tls-domain", "forms.example.org", "--tls-cert", cert, "--tls-key", key), 2, "tls-domain and tls-cert/tls-key are both set"},
		{serve("b", "--tls-cert", cert), 2, "give both --tls-cert (FORMD_TLS_CERT) and --tls-key (FORMD_TLS_KEY)"},
		{serve("c", "--tls-cert", garbage, "--tls-key", key), 1, "setting tls-cert (--tls-cert, FORMD_TLS_CERT): " + garbage + " holds no PEM certificate"},
		{serve("d", "--tls-cert", broken, "--tls-key", key), 1, "the certificate does not parse"},
		{serve("e", "--tls-cert", cert, "--tls-key", garbage), 1, "setting tls-key (--tls-key, FORMD_TLS_KEY): " + garbage + " holds no PEM private key"},
		{serve("f", "--tls-cert", cert, "--tls-key", otherKey), 1, "private key does not match public key"},
		{serve("g", "--tls-cert", filepath.Join(dir, "missing.pem"), "--tls-key", key), 1, "setting tls-cert (--tls-cert, FORMD_TLS_CERT): open"},
		{serve("h", "--tls-domain", "forms.example.org", "--acme-ca-roots", garbage), 1, "setting acme-ca-roots (--acme-ca-roots, FORMD_ACME_CA_ROOTS): " + garbage + " holds no PEM certificate"},
		{serve("i", "--tls-domain", "localhost"), 2, `"localhost" is not a full domain name`},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if got := out.String() + errb.String(); code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("formd %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, got, tc.code, tc.want)
		}
	}
}

// TestPortBelow1024: a process without the privilege to bind port 443 is
// told which setting asked for it and what would allow it. It runs formd
// as the nobody user, so it needs root to start from.
func TestPortBelow1024(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server")
	}
	if os.Geteuid() != 0 {
		// CI runs as root: there the check must run, not skip.
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_REQUIRE_SERVICES=1 and not root: this test runs formd as another user who may not bind port 443, which needs root to start from")
		}
		t.Skip("needs root, to run formd as another user who may not bind port 443")
	}
	t.Parallel()
	// formd makes its data directory, as nobody, in a directory anyone
	// may write.
	dir := nobodyDir(t, "formd-port", 0o777)
	bin := buildFormd(t, dir)
	data := filepath.Join(dir, "data")
	c, k := selfSigned(t, "forms.example.org")
	os.WriteFile(filepath.Join(dir, "cert.pem"), c, 0o644)
	os.WriteFile(filepath.Join(dir, "key.pem"), k, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "127.0.0.1:443"}, "listen on 127.0.0.1:443 (--addr, FORMD_ADDR): port 443 is below 1024 and this process may not bind it: run formd with the CAP_NET_BIND_SERVICE capability"},
		{[]string{"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:80"}, "listen on 127.0.0.1:80 (--http-addr, FORMD_HTTP_ADDR): port 80 is below 1024"},
	} {
		var out bytes.Buffer
		args := append([]string{"serve", "--data", data, "--metrics-addr", "off", "--tls-cert", filepath.Join(dir, "cert.pem"), "--tls-key", filepath.Join(dir, "key.pem")}, tc.args...)
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("formd %s as nobody: %v\n%s\nwant exit 1 and %q", strings.Join(args, " "), err, out.String(), tc.want)
		}
	}
}

// TestPortBelow1024 skips where it is not root, and fails there under
// FORMD_REQUIRE_SERVICES=1 (CI runs as root: the check must run). The
// test runs it as a child process as the nobody user, so it needs root to
// start from.
func TestPortBelow1024HonoursRequireServices(t *testing.T) {
	if os.Getenv("PORT_BELOW_1024_CHILD") == "1" {
		t.Skip("the child runs TestPortBelow1024 only")
	}
	if os.Geteuid() != 0 {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_REQUIRE_SERVICES=1 and not root: this test runs TestPortBelow1024 as another user")
		}
		t.Skip("needs root, to run the test as a user who is not")
	}
	t.Parallel()
	dir := nobodyDir(t, "formd-port-require", 0o755)
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		require  string
		fails    bool
		contains string
	}{
		{"", false, "SKIP"},
		{"1", true, "FORMD_REQUIRE_SERVICES=1 and not root"},
	} {
		cmd := exec.Command(bin, "-test.run=^TestPortBelow1024$", "-test.v")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PORT_BELOW_1024_CHILD=1", "FORMD_REQUIRE_SERVICES="+c.require)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.contains) {
			t.Errorf("as nobody, FORMD_REQUIRE_SERVICES=%q: err %v, output:\n%s\nwant failed=%v and %q", c.require, err, out, c.fails, c.contains)
		}
	}
}

// nobodyDir makes a directory with mode perm that the nobody user may
// enter, where t.TempDir's may not be (its parent is root's only); it is
// removed when t ends.
func nobodyDir(t *testing.T, prefix string, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBaseURL: the printed setup link is on the public URL, or on the
// listen address over the scheme formd serves.
func TestBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		public, cert, addr, want string
	}{
		{"", "", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"", "", ":8080", "http://127.0.0.1:8080"},
		{"", "/c.pem", "[::]:8443", "https://127.0.0.1:8443"},
		{"https://forms.example.org", "", "127.0.0.1:8080", "https://forms.example.org"},
	} {
		cfg := config.Default()
		cfg.PublicURL, cfg.TLSCert, cfg.TLSKey = tc.public, tc.cert, tc.cert
		if got := baseURL(cfg, tc.addr); got != tc.want {
			t.Errorf("public %q, cert %q, addr %q: %q, want %q", tc.public, tc.cert, tc.addr, got, tc.want)
		}
	}
}
