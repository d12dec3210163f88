//go:build !unix

package loadtest

// ensureFiles has nothing to check where there is no RLIMIT_NOFILE.
func ensureFiles(uint64) error { return nil }
