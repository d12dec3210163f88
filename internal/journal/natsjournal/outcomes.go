package natsjournal

import (
	"fmt"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
)

var _ journal.OutcomeBus = (*Journal)(nil)

// outcomeSubject is where instances announce decisions. It is outside the
// stream's subjects (prefix.>): announcements are core NATS, at most once,
// never journaled.
func (j *Journal) outcomeSubject() string { return j.prefix + "_outcomes" }

// PublishOutcomes announces decided outcomes to every instance of the
// deployment, so that a request waiting on one instance learns an outcome
// decided on another at once instead of at its next poll of the store. A
// lost announcement costs only that: the poll still finds the outcome.
func (j *Journal) PublishOutcomes(data []byte) error {
	if err := j.nc.Publish(j.outcomeSubject(), data); err != nil {
		return fmt.Errorf("announce outcomes: %w", err)
	}
	return nil
}

// SubscribeOutcomes calls fn with every announcement until stop is called.
func (j *Journal) SubscribeOutcomes(fn func(data []byte)) (stop func(), err error) {
	sub, err := j.nc.Subscribe(j.outcomeSubject(), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("listen for outcomes: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
