package natstest_test

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/formd/formd/internal/journal/natsjournal/natstest"
)

// Without an external server, a test that needs one skips; with
// FORMD_REQUIRE_SERVICES=1 (as .ci/run sets it) it fails, naming the
// variable; a server named that does not answer fails it either way. The
// test runs itself as a child process with each environment.
func TestRequireServices(t *testing.T) {
	if os.Getenv("NATSTEST_CHILD") == "1" {
		natstest.ExternalURL(t)
		return
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		url, require string
		fails        bool
		contains     string
	}{
		{"", "", false, "SKIP"},
		{"", "1", true, natstest.EnvURL + " is not set"},
		{closed, "", true, "no NATS server answers"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireServices$", "-test.v")
		cmd.Env = append(os.Environ(), "NATSTEST_CHILD=1", natstest.EnvURL+"="+c.url, natstest.EnvRequire+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.contains) {
			t.Errorf("url %q, %s=%q: err %v, output:\n%s\nwant failed=%v and %q", c.url, natstest.EnvRequire, c.require, err, out, c.fails, c.contains)
		}
	}
}
