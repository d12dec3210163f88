//go:build unix

package https_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
)

// TestCertificateReloadOnSIGHUP: SIGHUP reloads the pair at once, without
// waiting for the files to be checked.
func TestCertificateReloadOnSIGHUP(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c1, k1 := ca.leaf(t, 1, time.Now().Add(time.Hour), "127.0.0.1")
	writeAtomically(t, certFile, c1)
	writeAtomically(t, keyFile, k1)
	r := startListening(t, func(c *config.Config) { c.TLSCert, c.TLSKey, c.TLSCheckEvery = certFile, keyFile, time.Hour })
	serial := func() int64 {
		c := tlsClient(t, ca.pool(), r.Public.Addr().String())
		defer c.CloseIdleConnections()
		return get(t, c, "https://"+r.Public.Addr().String()+"/healthz").TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	if n := serial(); n != 1 {
		t.Fatalf("certificate %d, want 1", n)
	}
	c2, k2 := ca.leaf(t, 2, time.Now().Add(time.Hour), "127.0.0.1")
	writeAtomically(t, certFile, c2)
	writeAtomically(t, keyFile, k2)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "SIGHUP to load the new certificate", 10*time.Second, func() bool { return serial() == 2 })
}
