//go:build unix

package loadtest

import (
	"fmt"
	"syscall"
)

// ensureFiles makes sure this process may open need file descriptors,
// raising the soft limit up to the hard one if it must. (Go already
// raises it at start-up; this covers the rest and says what to do.)
func ensureFiles(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open files limit: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max >= need {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("raise the open files limit to %d: %w", lim.Max, err)
		}
		return nil
	}
	return fmt.Errorf("this run needs about %d open files and the limit is %d (hard %d): raise it (ulimit -n) or lower --clients", need, lim.Cur, lim.Max)
}
