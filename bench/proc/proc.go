// Package proc is what the benchmark programs under bench/ ask of this
// machine about the formd they start: a free port for it, when it is
// ready, how much CPU it used, and how loaded the machine was, so that
// each program reports the same figures the same way.
package proc

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClkTck is the kernel's clock ticks a second (USER_HZ), 100 on Linux.
const ClkTck = 100

// FreePort is a loopback TCP port free at the moment of asking.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady polls url (a /readyz) until it answers 200, for at most
// within.
func WaitReady(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready: no 200 from %s within %v", url, within)
}

// CPUTicks is a process's user and system CPU time in clock ticks
// (ClkTck a second); 0 when it cannot be read.
func CPUTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages, as text.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Profile saves a CPU profile of d from formd's debug server
// (--debug-addr) to path.
func Profile(debugAddr string, d time.Duration, path string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debugAddr, int(d.Seconds())))
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// List writes figures such as per-round ratios to two decimals, spaced.
func List(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

// Median is the median of f over the results keep takes (the upper of the
// two middle ones for an even count), or 0 when it takes none.
func Median[R any](rs []R, keep func(R) bool, f func(R) float64) float64 {
	var v []float64
	for _, r := range rs {
		if keep(r) {
			v = append(v, f(r))
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
