package webhooks_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// server, resolver and kept-alive connection a test starts must stop
// with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
