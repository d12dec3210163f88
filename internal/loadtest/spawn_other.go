//go:build !linux

package loadtest

import "syscall"

// sysProcAttr: only Linux can tie the server's life to the loadtest's;
// elsewhere the loadtest stops the server itself when it ends.
func sysProcAttr() *syscall.SysProcAttr { return nil }
