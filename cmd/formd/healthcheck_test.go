package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// formd healthcheck exits 0 while the server at --addr is ready and 1
// once it has stopped.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "", servertest.Options{})
	addr := strings.TrimPrefix(h.URL, "http://")
	var out, errOut bytes.Buffer
	if code := run([]string{"healthcheck", "--addr", addr}, &out, &errOut); code != 0 || out.String() != "ready\n" {
		t.Fatalf("a ready server: exit %d, %q %q", code, out.String(), errOut.String())
	}
	h.Stop()
	out.Reset()
	errOut.Reset()
	if code := run([]string{"healthcheck", "--addr", addr, "--timeout", "2s"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), addr) {
		t.Fatalf("a stopped server: exit %d, %q", code, errOut.String())
	}
	// An unspecified host means this machine, as for serve.
	_, port, _ := net.SplitHostPort(addr)
	if code := run([]string{"healthcheck", "--addr", ":" + port, "--timeout", "2s"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "127.0.0.1:"+port) {
		t.Fatalf("--addr :%s: exit %d, %q", port, code, errOut.String())
	}
}
