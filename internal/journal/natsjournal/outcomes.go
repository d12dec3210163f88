package natsjournal

import (
	"fmt"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
)

var _ journal.OutcomeBus = (*Journal)(nil)

// outcomeSubject is where an instance hears the outcomes its requests wait
// for: <prefix>_outcomes.<instance>. It is outside the stream's subjects
// (prefix.>): announcements are core NATS, at most once, never journaled.
// One subject an instance keeps the cost of an announcement to its decider
// and its waiter, whatever the number of instances.
//
// Releases before this one announced every outcome on <prefix>_outcomes to
// every instance. During a rolling upgrade the two do not hear each other;
// a request waiting across them is answered by its instance's poll of the
// store, as when an announcement is lost.
func (j *Journal) outcomeSubject(instance string) string {
	return j.prefix + "_outcomes." + token(instance)
}

// PublishOutcomes announces decided outcomes to instance, whose requests
// wait for them. A lost announcement costs only that: the instance's poll
// of the store still finds the outcome.
func (j *Journal) PublishOutcomes(instance string, data []byte) error {
	if err := j.nc.Publish(j.outcomeSubject(instance), data); err != nil {
		return fmt.Errorf("announce outcomes to %s: %w", instance, err)
	}
	return nil
}

// SubscribeOutcomes calls fn with every announcement to instance until
// stop is called.
func (j *Journal) SubscribeOutcomes(instance string, fn func(data []byte)) (stop func(), err error) {
	sub, err := j.nc.Subscribe(j.outcomeSubject(instance), func(m *nats.Msg) { fn(m.Data) })
	if err != nil {
		return nil, fmt.Errorf("listen for outcomes: %w", err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// MaxAnnouncement is the server's max_payload: PublishOutcomes refuses
// more (nats.ErrMaxPayload), and the whole announcement is lost with it.
func (j *Journal) MaxAnnouncement() int { return int(j.nc.MaxPayload()) }
