package main

import (
	"strings"
	"testing"
)

func TestShareFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		err  bool
	}{
		{"15%", 0.15, false},
		{"0.15", 0.15, false},
		{"0", 0, false},
		{"100%", 1, false},
		{"1", 1, false},
		{"150%", 0, true},
		{"-0.1", 0, true},
		{"lots", 0, true},
	}
	for _, tc := range tests {
		var v float64
		err := shareFlag{&v}.Set(tc.in)
		if (err != nil) != tc.err || !tc.err && v != tc.want {
			t.Errorf("Set(%q) = %g, %v; want %g (error %v)", tc.in, v, err, tc.want, tc.err)
		}
	}
}

// Usage errors exit 2 before anything starts; the help defines what the
// checker counts.
func TestLoadtestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		status int
		says   string
	}{
		{"help", []string{"-h"}, 0, "lost "},
		{"not loopback", []string{"--url", "http://192.168.1.10:8080", "--admin-token", "x"}, 2, "loopback"},
		{"bad share", []string{"--drop-requests", "120%"}, 2, "share"},
		{"bad spawn quoting", []string{"--spawn", `formd "serve`}, 2, "quote"},
		{"kill without spawn", []string{"--url", "http://127.0.0.1:1", "--kill-every", "1s"}, 2, "--spawn"},
		{"stray argument", []string{"--url", "http://127.0.0.1:1", "extra"}, 2, "unexpected"},
	}
	for _, tc := range tests {
		var stdout, stderr strings.Builder
		got := run(append([]string{"loadtest"}, tc.args...), &stdout, &stderr)
		out := stderr.String()
		if tc.status == 0 {
			out = stdout.String() // help asked for goes to stdout
		}
		if got != tc.status || !strings.Contains(out, tc.says) {
			t.Errorf("%s: exit %d, want %d; it should say %q:\n%s", tc.name, got, tc.status, tc.says, out)
		}
	}
}

func TestHangingIndent(t *testing.T) {
	t.Parallel()
	got := hangingIndent("lost", strings.Repeat("word ", 30), 14, 40)
	for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if len(line) > 40 {
			t.Errorf("line %d is %d wide: %q", i, len(line), line)
		}
		if i > 0 && !strings.HasPrefix(line, strings.Repeat(" ", 16)+"word") {
			t.Errorf("line %d is not indented under the text: %q", i, line)
		}
	}
}
