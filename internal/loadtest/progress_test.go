package loadtest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
)

// lockedBuilder is a strings.Builder safe to read while progress writes.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Progress rewrites one line on a terminal; elsewhere (a log, a pipe, CI)
// each report is a plain line of its own, without terminal escapes.
func TestProgress(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{true, false} {
		e := &engine{started: time.Now()}
		e.counters.acked.Store(42)
		var out lockedBuilder
		stop := e.progress(&out, live, 5*time.Millisecond)
		poll.Until(t, "two progress reports", 5*time.Second, func() bool { return strings.Count(out.String(), "acked 42") >= 2 })
		stop()
		got := out.String()
		if hasEscapes := strings.Contains(got, "\r") || strings.Contains(got, "\033["); hasEscapes != live {
			t.Errorf("live %v: terminal escapes %v in %q", live, hasEscapes, got)
		}
		if !live {
			for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if !strings.HasPrefix(line, "loadtest ") || !strings.Contains(line, "acked 42") {
					t.Errorf("not a progress line: %q", line)
				}
			}
		}
		if !strings.HasSuffix(got, "\n") {
			t.Errorf("live %v: the output does not end its line: %q", live, got)
		}
	}
}
