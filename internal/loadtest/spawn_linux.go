package loadtest

import "syscall"

// sysProcAttr makes the kernel kill the spawned server if the loadtest
// dies, so that no server outlives the run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
