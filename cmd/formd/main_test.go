package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind.
// With FORMD_TEST_OUTBOX_HELPER set, the test binary is TestPowerCut's
// outbox client instead.
func TestMain(m *testing.M) {
	if env := os.Getenv(envOutboxHelper); env != "" {
		os.Exit(outboxHelper(env))
	}
	goleak.VerifyTestMain(m)
}
