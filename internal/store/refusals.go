package store

import (
	"context"
	"time"
)

// RefusalCount is how many submissions to a form intake refused for one
// reason (a problem code: form-closed, validation-failed) in one hour,
// before anything of them was kept.
type RefusalCount struct {
	Form, Reason string
	Hour         time.Time
	N            int64
}

// Refusals counts what intake refused at the door, so that the console
// can say how many people met a closed form or values to fix.
type Refusals interface {
	// AddRefusals adds the counts, in one transaction.
	AddRefusals(ctx context.Context, counts []RefusalCount) error
	// RefusalsOf is a form's counts by reason, over all hours kept.
	RefusalsOf(ctx context.Context, form string) (map[string]int64, error)
}
