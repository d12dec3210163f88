//go:build unix

package server

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/formd/formd/internal/atomicfile"
)

// lockData takes an exclusive lock on the data directory for the life of
// the process: two servers on one embedded journal would each deliver its
// entries. Tools that only read or replay (export, audit, replay) do not
// take it. The lock goes with the process, even on kill -9.
func lockData(dir string) (release func(), err error) {
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the data directory (--data %s, FORMD_DATA): %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "formd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the data directory (--data %s): %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another formd serve is running on --data %s (its lock is held): stop it, or give this one another --data", dir)
	}
	return func() { f.Close() }, nil
}
