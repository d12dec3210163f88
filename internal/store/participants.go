package store

import "context"

// Participants is what the participant's link (GET /v1/entries/{token})
// reads beyond an entry's detail (ConsoleStore.Entry).
type Participants interface {
	// WaitlistPosition is a waitlisted entry's place in its waitlist,
	// from 1, in the order promotion serves it (its option's waitlist
	// when it waits for an option's place); 0 when it is not waitlisted.
	WaitlistPosition(ctx context.Context, form, id string) (int, error)
}
