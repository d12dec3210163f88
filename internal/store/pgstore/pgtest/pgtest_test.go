package pgtest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// Without a database, a test that needs one skips; with
// FORMD_REQUIRE_SERVICES=1 (as .ci/run sets it) it fails, naming the
// variable to set. The test runs itself as a child process with each
// environment.
func TestRequireServices(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		pgtest.URL(t)
		return
	}
	t.Parallel()
	for _, c := range []struct {
		require  string
		fails    bool
		contains string
	}{
		{"", false, "SKIP"},
		{"1", true, pgtest.EnvURL + " is not set"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireServices$", "-test.v")
		cmd.Env = append(os.Environ(), "PGTEST_CHILD=1", pgtest.EnvURL+"=", pgtest.EnvRequire+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.contains) {
			t.Errorf("%s=%q: err %v, output:\n%s\nwant failed=%v and %q", pgtest.EnvRequire, c.require, err, out, c.fails, c.contains)
		}
	}
}
