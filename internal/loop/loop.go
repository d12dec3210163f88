// Package loop runs formd's background jobs (the forms' refresh, the
// reconciler, retention, lease renewals): each is a runOnce that tests call
// directly, and loop.Every is the one place that calls it on an interval
// until the job's context ends.
package loop

import (
	"context"
	"time"
)

// Every calls fn each time the interval d passes, the first time after d,
// until ctx ends. It returns when ctx is done; a call of fn in progress is
// waited for, since fn runs on the caller's goroutine.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
