package loadtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "formd serve", want: []string{"formd", "serve"}},
		{in: "  formd   serve\t--data /tmp/x ", want: []string{"formd", "serve", "--data", "/tmp/x"}},
		{in: `formd serve --forms "my forms.yaml"`, want: []string{"formd", "serve", "--forms", "my forms.yaml"}},
		{in: `a 'b c' "d \"e\"" f\ g`, want: []string{"a", "b c", `d "e"`, "f g"}},
		{in: `a ''`, want: []string{"a", ""}},
		{in: `a "b`, err: true},
		{in: `a 'b`, err: true},
		{in: "   ", err: true},
	}
	for _, tc := range tests {
		got, err := SplitCommand(tc.in)
		if (err != nil) != tc.err || !tc.err && !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFlagValue(t *testing.T) {
	t.Parallel()
	args := []string{"serve", "--data", "/d", "-addr=127.0.0.1:9", "--forms=f.yaml", "--log-level"}
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"data", "/d", true},
		{"addr", "127.0.0.1:9", true},
		{"forms", "f.yaml", true},
		{"log-level", "", false}, // no value follows
		{"store", "", false},
	}
	for _, tc := range tests {
		got, ok := flagValue(args, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("flagValue(%s) = %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// The token printed on a first start is captured and kept out of the
// log, whatever the write boundaries.
func TestTokenWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "server.log")
	s, err := newSupervisor([]string{"x"}, nil, "127.0.0.1:1", path)
	if err != nil {
		t.Fatal(err)
	}
	token := "fmd_" + strings.Repeat("Ab9_-", 8)
	out := "starting\nformd: this is the admin token:\n\n    " + token + "\n\nserving\n"
	w := &tokenWriter{s: s}
	for i := 0; i < len(out); i += 7 {
		if _, err := w.Write([]byte(out[i:min(i+7, len(out))])); err != nil {
			t.Fatal(err)
		}
	}
	s.log.Close()
	if got := s.adminToken(); got != token {
		t.Errorf("captured %q, want %q", got, token)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), token) || !strings.Contains(string(b), "serving") {
		t.Errorf("log:\n%s\nwant every line, without the token", b)
	}
}

// The CPU time of a process is read from /proc, and it only grows.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	a, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 20_000_000 {
		x ^= i
	}
	_ = x
	b, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if a < 0 || b < a {
		t.Errorf("cpu time went from %s to %s", a, b)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("no error for a process that cannot exist")
	}
}
