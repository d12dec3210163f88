package store

import (
	"context"
	"time"

	"github.com/formd/formd/internal/attempt"
)

// The outbox: deliveries of events to endpoints (webhooks, e-mail). The
// events are written with the decisions; a dispatcher fans each event out
// to the endpoints that want it (AddDeliveries), claims due deliveries
// with a lease so that no two instances send one at the same time
// (ClaimDeliveries), and records each attempt (FinishDeliveries). Every
// delivery is sent at least once; receivers dedupe by the event's id.

// Delivery states.
const (
	DeliveryPending   = "pending"   // to be sent, at NextAt
	DeliveryDelivered = "delivered" // the endpoint took it
	DeliveryFailed    = "failed"    // given up on: a delivery dead letter
	DeliverySkipped   = "skipped"   // not sent, not failed: its endpoint was disabled (410 Gone), or there was no one to send it to
)

// DeliveryKey names one delivery: an event to an endpoint.
type DeliveryKey struct {
	EventSeq uint64
	Endpoint string
}

// NewDelivery is a delivery the fan-out adds, due at NextAt (zero: now).
type NewDelivery struct {
	DeliveryKey
	Form, Site string
	NextAt     time.Time
}

// ClaimQuery says which due deliveries to claim: at most Limit, and at
// most PerEndpoint to one endpoint (0: no cap); to the endpoint Endpoint
// only, or to any endpoint but Except and those listed in Exclude (busy,
// or their circuit breaker open).
type ClaimQuery struct {
	Limit       int
	PerEndpoint int
	Endpoint    string
	Except      string
	Exclude     []string
}

// Delivery is one delivery with its event.
type Delivery struct {
	DeliveryKey
	Event      Event
	State      string
	Attempts   int
	NextAt     time.Time
	LastStatus int
	LastError  string
	UpdatedAt  time.Time
	// NoticeTo is the address an EventErased event carries, read by
	// ClaimDeliveries alone (the one place that sends to it); "" for
	// every other event, and once the event's deliveries are finished.
	NoticeTo string `json:"-"`
}

// Attempt is one try of a delivery, for its log.
type Attempt struct {
	DeliveryKey
	At      time.Time
	Status  int // HTTP status or SMTP reply code; 0 without an answer
	Latency time.Duration
	Outcome attempt.Outcome
	Excerpt string // the start of the answer, or why there was none
}

// Finish is what an attempt (or a decision without one, such as a digest
// folding a delivery into another) did to a delivery.
type Finish struct {
	DeliveryKey
	// Owner is the lease holder; a delivery whose lease another instance
	// took meanwhile is not changed (the attempt is logged all the same).
	Owner string
	// Attempt is logged when its At is set.
	Attempt Attempt
	// State is the delivery's state after it: pending again (NextAt set)
	// or final.
	State  string
	NextAt time.Time
	// Counted says the attempt counts against the delivery's attempts (a
	// deferral by an open circuit breaker does not).
	Counted bool
	Error   string
}

// DeliverySelection picks deliveries to send again: one (Key), or those of
// a form or a site whose events happened in a window, failed ones only or
// all.
type DeliverySelection struct {
	Key          *DeliveryKey
	Form, Site   string
	Since, Until time.Time
	FailedOnly   bool
}

// DeliveryStats describe the outbox for the metrics.
type DeliveryStats struct {
	Pending int64
	// OldestPending is when the oldest pending delivery's event happened;
	// zero when none is pending.
	OldestPending time.Time
	Failed        int64
	// UnfannedEvents counts events not yet turned into deliveries.
	UnfannedEvents int64
}

// EntryDoc is an entry as a delivery describes it: the row, its site and
// its receipt.
type EntryDoc struct {
	Row
	Site    string
	Receipt [32]byte // the fingerprint the submitter was given
}

// Outbox is what a store provides the dispatcher and the deliveries API.
type Outbox interface {
	// FanOut takes up to limit events not fanned out yet, oldest first
	// (skipping those another instance is taking), asks plan for their
	// deliveries, adds them (an existing one is left as it is) and marks
	// the events fanned out, in one transaction. It says how many events
	// it took. Events are marked rather than passed by a cursor, because
	// concurrent transactions commit their events out of sequence order.
	FanOut(ctx context.Context, limit int, now time.Time, plan func([]Event) []NewDelivery) (int, error)
	// ClaimDeliveries leases the pending deliveries the query selects that
	// are due at now to owner until now+lease, oldest due first and, among
	// those due at the same time, in event order (so that an endpoint gets
	// an entry's events in the order they happened: a fan-out makes all
	// its deliveries due at once), skipping those another owner holds; an
	// expired lease is taken over. They are returned in that order.
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, q ClaimQuery) ([]Delivery, error)
	// ReleaseLeases frees every lease: for a single instance starting up
	// (the embedded store, whose data directory one server holds), whose
	// leases from before a crash would otherwise wait to run out.
	ReleaseLeases(ctx context.Context) (int, error)
	// FinishDeliveries records attempts and the deliveries' new states, in
	// one transaction (a dispatcher gathers what its senders finished, so
	// that a busy outbox commits once for many deliveries).
	FinishDeliveries(ctx context.Context, fs []Finish, now time.Time) error
	// Redeliver makes the selected deliveries pending again, due now, with
	// their attempts counted from zero; it returns how many.
	Redeliver(ctx context.Context, sel DeliverySelection, now time.Time) (int, error)
	// DisableEndpoint switches an endpoint off (a 410 Gone) and skips its
	// pending deliveries; EnableEndpoint switches it on again.
	DisableEndpoint(ctx context.Context, endpoint, form, reason string, now time.Time) error
	EnableEndpoint(ctx context.Context, endpoint string) error
	// DisabledEndpoints lists the switched-off endpoints with why.
	DisabledEndpoints(ctx context.Context) (map[string]string, error)
	// EntryDocs reads entries for deliveries, by id; an id not in the
	// store is left out.
	EntryDocs(ctx context.Context, ids []string) (map[string]EntryDoc, error)
	// Deliveries lists the deliveries of an entry's events, with each
	// one's attempts, oldest first.
	Deliveries(ctx context.Context, entryID string) ([]Delivery, []Attempt, error)
	// DeliveryStats counts the outbox for the metrics.
	DeliveryStats(ctx context.Context) (DeliveryStats, error)
}
