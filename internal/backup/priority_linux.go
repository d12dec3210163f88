package backup

import (
	"runtime"
	"syscall"
)

// lowPriority runs fn on an OS thread of its own at the lowest CPU
// priority (nice 19), so that a backup — SQLite's page copy and the
// checksums, all on that thread — yields the CPU to intake. The thread is
// thrown away with the goroutine (it stays locked), so the server's other
// threads keep their priority.
func lowPriority(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// Raising one's own nice value needs no privilege; a failure
		// only leaves the backup at normal priority.
		syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19) //nolint:errcheck // best effort, see above
		fn()
	}()
	<-done
}
