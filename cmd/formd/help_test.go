package main

import (
	"bytes"
	"strings"
	"testing"
)

// Help that was asked for is printed to stdout (so it pipes into less or
// grep) and exits 0; a subcommand's -h likewise. A bare formd is still a
// usage error, on stderr.
func TestHelpGoesToStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Usage: formd <command>"},
		{[]string{"-h"}, "Usage: formd <command>"},
		{[]string{"help"}, "Usage: formd <command>"},
		{[]string{"serve", "-h"}, "-addr"},
		{[]string{"forms", "check", "--help"}, "-f"},
		{[]string{"export", "-h"}, "-format"},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), tc.want) || errOut.Len() != 0 {
			t.Errorf("formd %s: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout only",
				strings.Join(tc.args, " "), code, out.String(), errOut.String(), tc.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "Usage:") {
		t.Errorf("bare formd: exit %d, stdout %q, stderr %q; want the usage on stderr and exit 2", code, out.String(), errOut.String())
	}
}
