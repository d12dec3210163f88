// Package outbox delivers what happens to entries — webhooks to the
// owner's systems, e-mail to the owner and to the person — to the same
// standard as intake: nothing is silently not delivered, nothing is
// delivered as two different events.
//
// Each decision that makes or changes an entry writes an event in the same
// store transaction (package store). The dispatcher here fans every event
// out to the endpoints of its form that want it (a delivery per event and
// endpoint, added idempotently), then claims due deliveries with a lease
// so that no two instances send one at the same time, sends them, and
// records each attempt: delivered on a 2xx within the timeout; retried
// with backoff and jitter for about three days (honouring Retry-After),
// then a delivery dead letter; a 410 switches the endpoint off. A
// delivery whose holder died is taken over when its lease runs out, so
// every event arrives at least once, always with the same id (webhook-id,
// the e-mail's Message-ID) for receivers to drop a repeat.
//
// One dead endpoint never slows intake (deliveries leave after the
// decision, from a separate loop) nor other endpoints: each endpoint has a
// few sends at a time and a circuit breaker that, once most of its recent
// attempts failed, defers its deliveries without tying up a worker, lets
// one probe through when its period ends and closes on the probe's
// success (breaker.go). A receiver that only fails now and then is left to
// each delivery's retry schedule.
//
// What is sent is a Channel's (channel.go): webhooks (webhook.go, with
// body.go) and e-mail (mail.go) here, the chat platforms' robots in
// internal/channels. The files follow the work: outbox.go fans events
// out to the channels' endpoints, claim.go claims and batches them for
// the workers, breaker.go holds endpoints back, finish.go asks the
// channel for one attempt and records what it did, metrics.go counts it.
package outbox

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/webhooks"
)

// Store is the part of the store the dispatcher uses.
type Store interface {
	FanOut(ctx context.Context, limit int, now time.Time, plan func([]store.Event) []store.NewDelivery) (int, error)
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, q store.ClaimQuery) ([]store.Delivery, error)
	FinishDeliveries(ctx context.Context, fs []store.Finish, now time.Time) error
	DisableEndpoint(ctx context.Context, endpoint, form, reason string, now time.Time) error
	EntryDocs(ctx context.Context, ids []string) (map[string]store.EntryDoc, error)
}

// Forms finds a form's current definition and its site's settings:
// deliveries go to the endpoints they name when they are sent.
type Forms interface {
	Get(id string) *form.Form
	Site(id string) *form.Site
}

// Webhooks sends one webhook attempt (webhooks.Sender).
type Webhooks interface {
	Send(ctx context.Context, req webhooks.Request) webhooks.Result
}

// Mailer sends one e-mail (email.Mailer); nil when no SMTP server is set,
// and then e-mail deliveries wait.
type Mailer interface {
	Send(ctx context.Context, msg email.Message) error
}

// DefaultSchedule is the wait before each retry: about three days in all,
// as the webhook services people use do; each is jittered by ±20 %.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// Options tune a dispatcher. Zero values take the defaults.
type Options struct {
	// Owner names this instance in leases. Default a random id.
	Owner string
	// Workers bounds the sends in progress. Default 16.
	Workers int
	// PerEndpoint bounds the sends in progress to one endpoint. Default 4.
	PerEndpoint int
	// Batch is how many deliveries to one endpoint a worker takes at once
	// and sends one after another: a busy outbox claims, reads entries
	// and records attempts for many deliveries at a time. At most
	// Workers×Batch deliveries are claimed and not yet sent. Default 32.
	Batch int
	// SendTimeout is the longest one attempt takes (the webhook sender's
	// timeout). A worker stops taking deliveries of its batch when its
	// lease would run out before one more attempt ends, and gives the rest
	// back. Default 15s.
	SendTimeout time.Duration
	// Lease is how long a claimed delivery is this instance's; another
	// takes it over after that. Default 2 minutes, well above a send's
	// timeout.
	Lease time.Duration
	// Schedule is the wait before each retry; after the last, the
	// delivery fails. Default DefaultSchedule.
	Schedule []time.Duration
	// BreakerTrip failures among an endpoint's last BreakerWindow
	// results (results of its own, not of one recipient) open its breaker
	// for BreakerOpen; then one probe goes through, and each failed probe
	// doubles the period up to BreakerMaxOpen. Defaults 16 of 20, 30s and
	// 10 minutes: a receiver failing a third of the time does not trip it.
	BreakerWindow  int
	BreakerTrip    int
	BreakerOpen    time.Duration
	BreakerMaxOpen time.Duration
	// Files lists an entry's files with signed links, for the file
	// fields of webhook bodies; nil leaves their upload:<id> references.
	Files export.FileLister
	// Poll is how often the loops look for work when nothing woke them.
	// Default 1s.
	Poll time.Duration
	// Gather is the least time between two rounds a wake starts: the
	// wakes of the batches decided meanwhile make one round (idle.go).
	// Default 100ms.
	Gather time.Duration
	// ConsoleURL is the console's base URL for links in e-mail, such as
	// https://forms.example.org; empty for none.
	ConsoleURL string
	// Hasher, with ConsoleURL, puts the participant's link (package
	// entrylink) in the person's confirmation; nil for none.
	Hasher *form.Hasher
	// Location is the time zone of times in e-mail. Default UTC.
	Location *time.Location
	Now      func() time.Time
	Logger   *slog.Logger
	Metrics  *Metrics

	// Confirmations bounds the confirmations sent (budget.go).
	Confirmations ConfirmBudget
	// Channels deliver beside webhooks and e-mail (the chat platforms'
	// robots, internal/channels/…), each through this outbox.
	Channels []Channel
}

// DefaultLease is the default of the setting --delivery-lease.
const DefaultLease = 2 * time.Minute

func (o *Options) setDefaults() {
	if o.Owner == "" {
		var b [8]byte
		for i := range b {
			b[i] = byte(rand.IntN(256))
		}
		o.Owner = "formd-" + hex.EncodeToString(b[:])
	}
	if o.Workers <= 0 {
		o.Workers = 16
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = 4
	}
	if o.Batch <= 0 {
		o.Batch = 32
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = webhooks.DefaultTimeout
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultSchedule
	}
	if o.BreakerWindow <= 0 {
		o.BreakerWindow = DefaultBreakerWindow
	}
	if o.BreakerTrip <= 0 || o.BreakerTrip > o.BreakerWindow {
		o.BreakerTrip = min(DefaultBreakerTrip, o.BreakerWindow)
	}
	if o.BreakerOpen <= 0 {
		o.BreakerOpen = DefaultBreakerOpen
	}
	if o.BreakerMaxOpen < o.BreakerOpen {
		o.BreakerMaxOpen = max(DefaultBreakerMaxOpen, o.BreakerOpen)
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Gather <= 0 {
		o.Gather = 100 * time.Millisecond
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
}

// Dispatcher fans events out and delivers them.
type Dispatcher struct {
	st    Store
	forms Forms
	hooks Webhooks
	mail  Mailer
	opts  Options
	// channels are webhooks, e-mail, then Options.Channels.
	channels []Channel

	wake    chan struct{}
	workers chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	slots    map[string]chan struct{} // sends in progress per endpoint
	breakers map[string]*breaker
	claimed  map[string]int       // deliveries claimed and not yet sent, per endpoint
	goneAt   map[string]time.Time // when this dispatcher switched an endpoint off (a 410)
	inFlight int                  // their sum

	// Finished deliveries wait here for the next commit; one sender at a
	// time commits everything waiting (group commit).
	fmu      sync.Mutex
	finished []store.Finish
	flushing bool
}

// New makes a dispatcher; mail may be nil.
func New(st Store, forms Forms, hooks Webhooks, mail Mailer, opts Options) *Dispatcher {
	opts.setDefaults()
	d := &Dispatcher{st: st, forms: forms, hooks: hooks, mail: mail, opts: opts,
		wake: make(chan struct{}, 1), workers: make(chan struct{}, opts.Workers),
		slots: map[string]chan struct{}{}, breakers: map[string]*breaker{}, claimed: map[string]int{}, goneAt: map[string]time.Time{}}
	d.channels = append([]Channel{webhookChannel{d}, mailChannel{d}}, opts.Channels...)
	return d
}

// Wake tells the dispatcher that events were written, so it need not wait
// for its next poll.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run fans out and delivers until ctx ends, then waits for the sends in
// progress. A delivery in progress when the process dies is taken over
// when its lease runs out.
func (d *Dispatcher) Run(ctx context.Context) {
	defer d.wg.Wait()
	t := time.NewTicker(d.opts.Poll)
	defer t.Stop()
	for {
		round := d.opts.Now()
		fanned, err := d.FanOutOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("outbox fan-out failed; it is tried again", "err", err)
		}
		started, err := d.SendOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("outbox claim failed; it is tried again", "err", err)
		}
		if more(fanned, started) {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
			if !d.gather(ctx, round) {
				return
			}
		case <-t.C:
		}
	}
}

// Endpoint ids: a webhook is named by its URL (its secret may rotate), the
// owner's and the person's e-mail by kind; a breaker covers each, and the
// SMTP server is one breaker for all e-mail.
const (
	endpointOwner   = "email:owner"
	endpointConfirm = "email:confirm"
	breakerSMTP     = "smtp"
)

// notify is who hears of a form's entries by e-mail: its own notify
// block and its site's, together.
type notify struct {
	to         []string // the owner's addresses
	confirm    string   // the field of the person's address
	lang       string
	digestOver int
}

// notifyOf merges a form's e-mail setup with its site's.
func (d *Dispatcher) notifyOf(f *form.Form) notify { return mergeNotify(d.blocksOf(f)) }

// mergeNotify merges the e-mail setup of notify blocks, the form's
// first: the owner's addresses of both, the rest the form's.
func mergeNotify(blocks []*form.Notify) notify {
	n := notify{digestOver: form.DefaultDigestOver}
	for i, b := range blocks {
		if b == nil || b.Email == nil {
			continue
		}
		e := b.Email
		for _, to := range e.To {
			if !slices.Contains(n.to, to) {
				n.to = append(n.to, to)
			}
		}
		if i == 0 {
			n.confirm, n.lang = e.Confirm, e.Lang
			if e.DigestOver > 0 {
				n.digestOver = e.DigestOver
			}
		}
	}
	return n
}

// endpoints lists the endpoints of every channel that get an event of
// type typ.
func (d *Dispatcher) endpoints(blocks []*form.Notify, typ string) []string {
	var out []string
	for _, c := range d.channels {
		for _, ep := range c.Endpoints(blocks, typ) {
			if !slices.Contains(out, ep) {
				out = append(out, ep)
			}
		}
	}
	return out
}

// fanOutBatch bounds the events fanned out in one transaction.
const fanOutBatch = 500

// FanOutOnce adds the deliveries of events not fanned out yet, to the
// endpoints their forms name now, and says how many events it took.
// Instances may run it at once: each takes other events.
func (d *Dispatcher) FanOutOnce(ctx context.Context) (int, error) {
	now := d.opts.Now()
	// The owner's mail waits for the end of its minute, so that a minute's
	// entries leave together: one mail each, or one digest past
	// digest_over.
	minuteEnd := now.Truncate(time.Minute).Add(time.Minute)
	n, err := d.st.FanOut(ctx, fanOutBatch, now, func(evs []store.Event) []store.NewDelivery {
		var ds []store.NewDelivery
		for _, e := range evs {
			f := d.forms.Get(e.Form)
			if f == nil {
				continue
			}
			for _, ep := range d.endpoints(d.blocksOf(f), e.Type) {
				nd := store.NewDelivery{DeliveryKey: store.DeliveryKey{EventSeq: e.Seq, Endpoint: ep}, Form: e.Form, Site: e.Site}
				if ep == endpointOwner {
					nd.NextAt = minuteEnd
				}
				ds = append(ds, nd)
			}
		}
		return ds
	})
	if err != nil {
		return 0, fmt.Errorf("fan out: %w", err)
	}
	return n, nil
}
