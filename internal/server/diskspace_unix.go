//go:build unix

package server

import (
	"fmt"
	"syscall"
)

// diskSpace is the space free to an unprivileged writer, and the size, of
// the filesystem that holds dir.
func diskSpace(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
