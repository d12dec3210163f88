package loadtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// mainstream Linux architecture.
const clockTicks = 100

// processCPU is the CPU time (user + system) a process has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read cpu time of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; fields after its
	// closing parenthesis are plain. utime and stime are fields 14, 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("read cpu time of %d: unexpected /proc stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("read cpu time of %d: unexpected /proc stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read cpu time of %d: unexpected /proc stat", pid)
	}
	return time.Duration(u+st) * time.Second / clockTicks, nil
}
