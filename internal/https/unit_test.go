package https

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/prometheus/client_golang/prometheus"
)

// These tests pin the package's parts on their own; the tests in
// package https_test run them through a whole instance (server.Open).

// selfSigned writes a self-signed pair for name with the given serial
// number into dir and returns the files.
func selfSigned(t *testing.T, dir string, serial int64, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	replace(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	replace(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
	return certFile, keyFile
}

// replace writes a file through a rename, as an owner's tooling does, so
// that its stamp changes even within one clock tick.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPairNamesTheSetting(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir, 1, "forms.example.org")
	junk := filepath.Join(dir, "junk.pem")
	replace(t, junk, []byte("not pem\n"))
	other := t.TempDir()
	_, otherKey := selfSigned(t, other, 2, "other.example.org")
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"a missing certificate", filepath.Join(dir, "none.pem"), keyFile, "setting tls-cert (--tls-cert, FORMD_TLS_CERT)"},
		{"a missing key", certFile, filepath.Join(dir, "none.pem"), "setting tls-key (--tls-key, FORMD_TLS_KEY)"},
		{"no certificate in the file", junk, keyFile, "holds no PEM certificate"},
		{"no key in the file", certFile, junk, "holds no PEM private key"},
		{"a key of another certificate", certFile, otherKey, "settings tls-cert and tls-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadPair(tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("loadPair: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := loadPair(certFile, keyFile); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
}

// TestFileCertReloads: a changed pair is served from the next check, a
// pair that does not load is counted and leaves the one before, and an
// unchanged pair is not read again.
func TestFileCertReloads(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir, 1, "forms.example.org")
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "errs"})
	f, err := newFileCert(certFile, keyFile, time.Hour, slog.New(slog.DiscardHandler), errs)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() int64 {
		c, _ := f.GetCertificate(nil)
		return c.Leaf.SerialNumber.Int64()
	}
	if changed, err := f.checkOnce(); changed || err != nil {
		t.Fatalf("unchanged files: changed %v, err %v", changed, err)
	}
	selfSigned(t, dir, 2, "forms.example.org")
	if changed, err := f.checkOnce(); !changed || err != nil || serial() != 2 {
		t.Fatalf("a new pair: changed %v, err %v, serving %d, want 2", changed, err, serial())
	}
	replace(t, keyFile, []byte("half written\n"))
	if changed, err := f.checkOnce(); !changed || err == nil || serial() != 2 {
		t.Fatalf("a bad key: changed %v, err %v, serving %d, want the pair before (2)", changed, err, serial())
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(errs)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if n := mfs[0].GetMetric()[0].GetCounter().GetValue(); n != 1 {
		t.Fatalf("%v errors counted, want 1", n)
	}
	if got := f.expiry(); got["forms.example.org"].IsZero() || len(got) != 1 {
		t.Fatalf("expiry %v, want forms.example.org's", got)
	}
}

func TestIsHTTPS(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tc := range []struct {
		name   string
		remote string
		tls    bool
		header http.Header
		want   bool
	}{
		{"own TLS", "203.0.113.9:4000", true, nil, true},
		{"plain, no proxy", "203.0.113.9:4000", false, nil, false},
		{"untrusted peer says https", "203.0.113.9:4000", false, http.Header{"X-Forwarded-Proto": {"https"}}, false},
		{"trusted proxy, X-Forwarded-Proto", "10.1.2.3:4000", false, http.Header{"X-Forwarded-Proto": {"https"}}, true},
		{"trusted proxy, nearest hop counts", "10.1.2.3:4000", false, http.Header{"X-Forwarded-Proto": {"https, http"}}, false},
		{"trusted proxy, Forwarded", "10.1.2.3:4000", false, http.Header{"Forwarded": {`for=1.2.3.4;proto="https"`}}, true},
		{"trusted proxy, Forwarded http", "10.1.2.3:4000", false, http.Header{"Forwarded": {"proto=http"}}, false},
		{"trusted proxy, no header", "10.1.2.3:4000", false, nil, false},
		{"trusted proxy over IPv4-mapped IPv6", "[::ffff:10.1.2.3]:4000", false, http.Header{"X-Forwarded-Proto": {"https"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tc.header {
				r.Header[k] = v
			}
			if got := IsHTTPS(r, trusted); got != tc.want {
				t.Fatalf("IsHTTPS = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithHSTS(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, tc := range []struct {
		name   string
		maxAge time.Duration
		tls    bool
		want   string
	}{
		{"over https", 365 * 24 * time.Hour, true, "max-age=31536000"},
		{"over http", 365 * 24 * time.Hour, false, ""},
		{"turned off", 0, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			WithHSTS(ok, tc.maxAge, nil).ServeHTTP(w, r)
			if got := w.Header().Get("Strict-Transport-Security"); got != tc.want {
				t.Fatalf("Strict-Transport-Security %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRedirect: the plain-HTTP side sends every request to the same
// path over https with 308 (a POST stays a POST), on the public port
// unless it is 443.
func TestRedirect(t *testing.T) {
	for _, tc := range []struct {
		name, method, host, target string
		public                     int
		status                     int
		location                   string
	}{
		{"on 443", "GET", "forms.example.org", "/f/signup?lang=zh", 443, 308, "https://forms.example.org/f/signup?lang=zh"},
		{"another port", "POST", "forms.example.org:80", "/v1/forms/signup/submissions", 8443, 308, "https://forms.example.org:8443/v1/forms/signup/submissions"},
		{"no host", "GET", "", "/", 443, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *Certificates // no ACME: a redirect alone
			h := c.Redirect(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: tc.public})
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Host = tc.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || w.Header().Get("Location") != tc.location {
				t.Fatalf("%d %q, want %d %q", w.Code, w.Header().Get("Location"), tc.status, tc.location)
			}
		})
	}
}

func TestErrorLogQuietsHandshakes(t *testing.T) {
	var buf bytes.Buffer
	l := ErrorLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Print("http: TLS handshake error from 203.0.113.9:4000: EOF")
	l.Print("http: Accept error: too many open files")
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG msg=\"http: TLS handshake error") || !strings.Contains(out, "level=WARN msg=\"http: Accept error") {
		t.Fatalf("log:\n%s\nwant the handshake at debug, the rest at warn", out)
	}
}

func TestListenErrorSaysWhatAllowsLowPorts(t *testing.T) {
	err := listenError("http-addr", ":80", fmt.Errorf("listen tcp :80: bind: %w", syscall.EACCES))
	for _, want := range []string{"--http-addr", "FORMD_HTTP_ADDR", "CAP_NET_BIND_SERVICE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q in it", err, want)
		}
	}
	err = listenError("addr", "127.0.0.1:8080", syscall.EADDRINUSE)
	if !strings.Contains(err.Error(), "--addr") || strings.Contains(err.Error(), "CAP_NET_BIND_SERVICE") {
		t.Errorf("%v: want the setting named and no word of capabilities", err)
	}
}
