package email

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: the in-process
// SMTP servers and every Send must end theirs.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
