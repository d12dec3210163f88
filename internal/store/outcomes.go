package store

import "context"

// Key names one submission: its form and idempotency key.
type Key struct{ Form, Key string }

// OutcomesReader is a store that reads the outcomes of many keys in one
// query (pgstore), for an instance's one poll for all its waiting
// requests. Keys not decided yet are left out of the result.
type OutcomesReader interface {
	Outcomes(ctx context.Context, keys []Key) ([]Outcome, error)
}
