package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/problem"
)

// UploadLimits bound what the uploads no entry has claimed may hold, by
// the address they came from (its Source) and by their form: counted in
// the store, in the transaction that records a new upload, so that they
// hold across instances. Bytes are the declared lengths (Upload-Length)
// of the uploads not claimed and not expired; in flight are those of
// them whose bytes are not all durable yet. A zero or negative limit is
// no limit.
type UploadLimits struct {
	SourceBytes    int64
	SourceInFlight int
	FormBytes      int64
	FormInFlight   int
}

// The budgets an upload can find spent (UploadBudgetError.Budget).
const (
	BudgetSourceBytes    = "address-bytes"
	BudgetSourceInFlight = "address-in-flight"
	BudgetFormBytes      = "form-bytes"
	BudgetFormInFlight   = "form-in-flight"
)

// ErrUploadBudget is a new upload refused by its UploadLimits.
var ErrUploadBudget error = problem.Sentinel("upload budget spent", problem.CodeUploadBudget)

// UploadBudgetError names the budget a refused upload found spent.
type UploadBudgetError struct {
	Budget string
	// Held is what the budget counts already, Limit its limit.
	Held, Limit int64
}

func (e *UploadBudgetError) Error() string {
	return fmt.Sprintf("upload budget %s spent: %d held of %d", e.Budget, e.Held, e.Limit)
}

// Unwrap makes the error ErrUploadBudget.
func (e *UploadBudgetError) Unwrap() error { return ErrUploadBudget }

// UploadBudgets records new uploads within their limits. Every driver
// has it; storetest.RunUploads pins the rules.
type UploadBudgets interface {
	// CreateUploadWithin records a new, incomplete upload (as
	// CreateUpload) unless it would take its source or its form over a
	// limit: then nothing is recorded and the error is an
	// *UploadBudgetError. now decides which uploads have expired.
	CreateUploadWithin(ctx context.Context, u Upload, l UploadLimits, now time.Time) error
}

// UploadsHeld is what the unclaimed, unexpired uploads of one source or
// one form hold: the sum of their declared lengths and how many are
// incomplete.
type UploadsHeld struct {
	Bytes    int64
	InFlight int64
}

// CheckUploadLimits is the one rule both drivers apply: which budget, if
// any, a new upload of size bytes would overspend, given what its source
// and its form hold.
func CheckUploadLimits(l UploadLimits, size int64, source, form UploadsHeld) error {
	switch {
	case l.SourceInFlight > 0 && source.InFlight+1 > int64(l.SourceInFlight):
		return &UploadBudgetError{Budget: BudgetSourceInFlight, Held: source.InFlight, Limit: int64(l.SourceInFlight)}
	case l.SourceBytes > 0 && source.Bytes+size > l.SourceBytes:
		return &UploadBudgetError{Budget: BudgetSourceBytes, Held: source.Bytes, Limit: l.SourceBytes}
	case l.FormInFlight > 0 && form.InFlight+1 > int64(l.FormInFlight):
		return &UploadBudgetError{Budget: BudgetFormInFlight, Held: form.InFlight, Limit: int64(l.FormInFlight)}
	case l.FormBytes > 0 && form.Bytes+size > l.FormBytes:
		return &UploadBudgetError{Budget: BudgetFormBytes, Held: form.Bytes, Limit: l.FormBytes}
	}
	return nil
}

// IsUploadBudget says err is an upload refused by its limits, and which.
func IsUploadBudget(err error) (*UploadBudgetError, bool) {
	var be *UploadBudgetError
	if errors.As(err, &be) {
		return be, true
	}
	return nil, false
}
