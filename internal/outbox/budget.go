package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// Defaults of ConfirmBudget.
const (
	DefaultConfirmsPerRecipientHour = 10
	DefaultConfirmsPerFormMinute    = 600
)

// Budgets is the store's TakeBudgets: counts that hold across instances.
type Budgets interface {
	TakeBudgets(ctx context.Context, takes []store.Take, now time.Time) (refused int, err error)
}

// ConfirmBudget bounds the confirmations formd sends: a confirmation goes
// to whatever address a person types, so without a bound anyone could
// have formd mail one address again and again, or mail thousands through
// one form. Over either budget a confirmation is skipped, with the
// reason, never failed (it is no fault to retry or to alert on). The
// counts are in the store, so the bound holds across instances.
type ConfirmBudget struct {
	// Store keeps the counts; nil for no bound.
	Store Budgets
	// PerRecipientHour bounds the confirmations to one address in an
	// hour, over every form. Default DefaultConfirmsPerRecipientHour.
	PerRecipientHour int
	// PerFormMinute bounds a form's confirmations in a minute. Default
	// DefaultConfirmsPerFormMinute.
	PerFormMinute int
}

// take counts one confirmation of form to addr at now: "" when it may be
// sent, else why not.
func (b ConfirmBudget) take(ctx context.Context, form, addr string, now time.Time) (skip string, err error) {
	if b.Store == nil {
		return "", nil
	}
	perAddr, perForm := b.PerRecipientHour, b.PerFormMinute
	if perAddr <= 0 {
		perAddr = DefaultConfirmsPerRecipientHour
	}
	if perForm <= 0 {
		perForm = DefaultConfirmsPerFormMinute
	}
	// The address is kept hashed: a budget row is no place for it.
	sum := sha256.Sum256([]byte(strings.ToLower(addr)))
	takes := []store.Take{
		{Key: "confirm-to:" + hex.EncodeToString(sum[:16]), Window: time.Hour, Limit: perAddr},
		{Key: "confirm-form:" + form, Window: time.Minute, Limit: perForm},
	}
	switch refused, err := b.Store.TakeBudgets(ctx, takes, now); {
	case err != nil:
		return "", fmt.Errorf("count the confirmation against its budget: %w", err)
	case refused == 0:
		return fmt.Sprintf("skipped: this address was sent %d confirmations in the last hour, the most formd sends to one address", perAddr), nil
	case refused == 1:
		return fmt.Sprintf("skipped: this form sent %d confirmations in this minute, the most it sends in one", perForm), nil
	}
	return "", nil
}

// confirmable says whether a confirmation to addr may go: "" when it
// may, else why it is skipped. An address mail cannot reach (an entry
// taken before formd refused such addresses) is skipped; the first
// attempt of a delivery counts against the budget, its retries do not.
func (d *Dispatcher) confirmable(ctx context.Context, f *form.Form, dl store.Delivery, addr string) (skip string, err error) {
	if err := form.Deliverable(addr); err != nil {
		return "skipped: the address " + err.Error(), nil
	}
	if dl.Attempts > 0 {
		return "", nil
	}
	return d.opts.Confirmations.take(ctx, f.ID(), addr, d.opts.Now())
}
