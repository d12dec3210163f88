//go:build !linux

package backup

// lowPriority runs fn; only Linux has per-thread priorities to lower.
func lowPriority(fn func()) { fn() }
