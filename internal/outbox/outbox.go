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
// few sends at a time and a circuit breaker that, after consecutive
// failures, defers its deliveries without tying up a worker.
package outbox

import (
	"context"
	"encoding/hex"
	"errors"
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
	// BreakerAfter consecutive failures open an endpoint's breaker for
	// BreakerOpen (doubling while it keeps failing, up to 10 minutes).
	// Defaults 5 and 30s.
	BreakerAfter int
	BreakerOpen  time.Duration
	// Files lists an entry's files with signed links, for the file
	// fields of webhook bodies; nil leaves their upload:<id> references.
	Files export.FileLister
	// Poll is how often the loops look for work when nothing woke them.
	// Default 1s.
	Poll time.Duration
	// ConsoleURL is the console's base URL for links in e-mail, such as
	// https://forms.example.org; empty for none.
	ConsoleURL string
	// Location is the time zone of times in e-mail. Default UTC.
	Location *time.Location
	Now      func() time.Time
	Logger   *slog.Logger
	Metrics  *Metrics
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
	if o.BreakerAfter <= 0 {
		o.BreakerAfter = 5
	}
	if o.BreakerOpen <= 0 {
		o.BreakerOpen = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
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
	return &Dispatcher{st: st, forms: forms, hooks: hooks, mail: mail, opts: opts,
		wake: make(chan struct{}, 1), workers: make(chan struct{}, opts.Workers),
		slots: map[string]chan struct{}{}, breakers: map[string]*breaker{}, claimed: map[string]int{}, goneAt: map[string]time.Time{}}
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
		fanned, err := d.FanOutOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("outbox fan-out failed; it is tried again", "err", err)
		}
		started, err := d.SendOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("outbox claim failed; it is tried again", "err", err)
		}
		if fanned > 0 || started > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
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

// notify is who hears of a form's entries: its own notify block and its
// site's, together.
type notify struct {
	webhooks   []form.Webhook
	to         []string // the owner's addresses
	confirm    string   // the field of the person's address
	lang       string
	digestOver int
}

// notifyOf merges a form's notify block with its site's.
func (d *Dispatcher) notifyOf(f *form.Form) notify {
	n := notify{digestOver: form.DefaultDigestOver}
	blocks := []*form.Notify{f.Def.Notify}
	if site := d.forms.Site(f.Def.Site); site != nil {
		blocks = append(blocks, site.Def.Notify)
	}
	for i, b := range blocks {
		if b == nil {
			continue
		}
		n.webhooks = append(n.webhooks, b.Webhooks...)
		if e := b.Email; e != nil {
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
	}
	return n
}

// endpoints lists the endpoints that get an event of type typ.
func (n notify) endpoints(typ string) []string {
	var out []string
	for _, w := range n.webhooks {
		if ep := w.Endpoint(); w.Wants(typ) && !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	if len(n.to) > 0 && (typ == store.EventStored || typ == store.EventWaitlisted) {
		out = append(out, endpointOwner)
	}
	if n.confirm != "" && (typ == store.EventStored || typ == store.EventWaitlisted || typ == store.EventPromoted) {
		out = append(out, endpointConfirm)
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
			for _, ep := range d.notifyOf(f).endpoints(e.Type) {
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

// SendOnce claims due deliveries, as many as the workers have room for,
// and starts sending them; it says how many it started. An endpoint gets
// at most PerEndpoint sends at a time, each of a batch of its deliveries
// sent one after another: the claim takes no more of one endpoint than
// PerEndpoint batches, and none of an endpoint with that many waiting or
// whose breaker is open (they stay due, in the store, for a later claim).
// The owner's mail is claimed a form's minute at a time and sent as one
// worker's job: one mail per entry, or one digest when there are more
// than the form's digest_over.
func (d *Dispatcher) SendOnce(ctx context.Context) (int, error) {
	if ctx.Err() != nil {
		return 0, nil
	}
	now := d.opts.Now()
	budget, exclude := d.room(now)
	if budget <= 0 {
		return 0, nil
	}
	claimed, err := d.st.ClaimDeliveries(ctx, d.opts.Owner, now, d.opts.Lease,
		store.ClaimQuery{Limit: budget, PerEndpoint: d.opts.PerEndpoint * d.opts.Batch, Except: endpointOwner, Exclude: exclude})
	if err != nil {
		return 0, fmt.Errorf("claim deliveries: %w", err)
	}
	jobs := d.batches(claimed)
	if len(claimed) < budget && !slices.Contains(exclude, breakerSMTP) {
		mail, err := d.st.ClaimDeliveries(ctx, d.opts.Owner, now, d.opts.Lease, store.ClaimQuery{Limit: maxOwnerMail, Endpoint: endpointOwner})
		if err != nil {
			return 0, fmt.Errorf("claim the owner's mail: %w", err)
		}
		if len(mail) > 0 {
			jobs = append(jobs, mail)
		}
	}
	for _, job := range jobs {
		d.hold(job[0].Endpoint, len(job))
		d.wg.Go(func() { d.send(ctx, job, now) })
	}
	return len(claimed), nil
}

// batches splits claimed deliveries into one worker's jobs: each one
// endpoint's, at most Batch long, spread over the endpoint's PerEndpoint
// sends so that a short backlog is not sent by one of them alone.
func (d *Dispatcher) batches(ds []store.Delivery) [][]store.Delivery {
	byEndpoint := map[string][]store.Delivery{}
	var order []string
	for _, dl := range ds {
		if _, seen := byEndpoint[dl.Endpoint]; !seen {
			order = append(order, dl.Endpoint)
		}
		byEndpoint[dl.Endpoint] = append(byEndpoint[dl.Endpoint], dl)
	}
	var jobs [][]store.Delivery
	for _, ep := range order {
		list := byEndpoint[ep]
		size := min(d.opts.Batch, (len(list)+d.opts.PerEndpoint-1)/d.opts.PerEndpoint)
		for len(list) > 0 {
			n := min(size, len(list))
			jobs = append(jobs, list[:n:n])
			list = list[n:]
		}
	}
	return jobs
}

// send sends one job: the owner's mail of a minute, or a batch of one
// endpoint's deliveries, one after another. It stops early, giving the
// rest back due at once (or when the breaker closes), when the dispatcher
// stops, the endpoint's breaker opens, or the lease would run out before
// another attempt could end.
func (d *Dispatcher) send(ctx context.Context, job []store.Delivery, claimedAt time.Time) {
	key := breakerKey(job[0].Endpoint)
	defer d.Wake() // a freed worker or endpoint may let the next claim through
	defer d.hold(job[0].Endpoint, -len(job))
	slot := d.slot(key)
	slot <- struct{}{}
	defer func() { <-slot }()
	d.workers <- struct{}{}
	defer func() { <-d.workers }()
	sendCtx := context.WithoutCancel(ctx)
	docs := d.load(sendCtx, job)
	if job[0].Endpoint == endpointOwner {
		for _, g := range d.ownerMail(job) {
			d.deliver(sendCtx, g, docs)
		}
		return
	}
	// No attempt starts that could still run when the lease ends (with a
	// lease shorter than that, after half of it); the first always goes.
	stopAt := claimedAt.Add(max(d.opts.Lease-2*d.opts.SendTimeout, d.opts.Lease/2))
	for i, dl := range job {
		now := d.opts.Now()
		if d.goneSince(dl.Endpoint, claimedAt) {
			// The endpoint answered a 410 after this batch was claimed:
			// the rest is not sent.
			var skipped []store.Finish
			for _, rest := range job[i:] {
				skipped = append(skipped, store.Finish{DeliveryKey: rest.DeliveryKey, Owner: d.opts.Owner, State: store.DeliverySkipped,
					NextAt: now, Error: "not sent: the endpoint answered 410 Gone and is disabled"})
			}
			d.finish(sendCtx, skipped...)
			return
		}
		open, until := d.breakerOpen(key, now)
		if ctx.Err() != nil || open || (i > 0 && now.After(stopAt)) {
			next := now
			if open {
				next = until
			}
			var back []store.Finish
			for _, rest := range job[i:] {
				back = append(back, store.Finish{DeliveryKey: rest.DeliveryKey, Owner: d.opts.Owner, State: store.DeliveryPending, NextAt: next})
			}
			d.finish(sendCtx, back...)
			return
		}
		d.deliver(sendCtx, []store.Delivery{dl}, docs)
	}
}

// goneSince says whether this dispatcher switched an endpoint off (a 410)
// at or after claimedAt: a batch claimed before then is not sent on.
func (d *Dispatcher) goneSince(endpoint string, claimedAt time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.goneAt[endpoint]
	return ok && !at.Before(claimedAt)
}

// hold counts n more (or, negative, fewer) deliveries of an endpoint as
// claimed and not yet sent.
func (d *Dispatcher) hold(endpoint string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.claimed[endpoint] += n
	d.inFlight += n
	if d.claimed[endpoint] <= 0 {
		delete(d.claimed, endpoint)
	}
}

// slot is an endpoint's semaphore of PerEndpoint sends.
func (d *Dispatcher) slot(key string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.slots[key]
	if !ok {
		s = make(chan struct{}, d.opts.PerEndpoint)
		d.slots[key] = s
	}
	return s
}

// room says how many deliveries the next claim may take, and which
// endpoints not to claim for now: those with PerEndpoint batches waiting,
// or whose breaker is open. E-mail endpoints are listed by the SMTP
// breaker's key and their own ids.
func (d *Dispatcher) room(now time.Time) (int, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	add := func(key string) {
		if slices.Contains(out, key) {
			return
		}
		if key == breakerSMTP {
			out = append(out, endpointConfirm, endpointOwner)
		}
		out = append(out, key)
	}
	for ep, n := range d.claimed {
		if n >= d.opts.PerEndpoint*d.opts.Batch {
			add(ep)
		}
	}
	for key, b := range d.breakers {
		if now.Before(b.openUntil) {
			add(key)
		}
	}
	budget := d.opts.Workers*d.opts.Batch - d.inFlight
	if d.inFlight > 0 && budget < d.opts.Batch {
		// Wait for a batch's room: claims of a few at a time would cost
		// a transaction each for little.
		budget = 0
	}
	return budget, out
}

// maxOwnerMail bounds the owner's mail claimed at once: a minute's entries
// of every form, in the thousands at a peak.
const maxOwnerMail = 10000

// ownerMail splits the owner's mail by form: a mail per entry, or one
// digest for a form with more than its digest_over.
func (d *Dispatcher) ownerMail(ds []store.Delivery) [][]store.Delivery {
	byForm := map[string][]store.Delivery{}
	var forms []string
	for _, dl := range ds {
		if _, seen := byForm[dl.Event.Form]; !seen {
			forms = append(forms, dl.Event.Form)
		}
		byForm[dl.Event.Form] = append(byForm[dl.Event.Form], dl)
	}
	var out [][]store.Delivery
	for _, f := range forms {
		list := byForm[f]
		over := form.DefaultDigestOver
		if fm := d.forms.Get(f); fm != nil {
			over = d.notifyOf(fm).digestOver
		}
		if len(list) > over {
			out = append(out, list)
			continue
		}
		for _, dl := range list {
			out = append(out, []store.Delivery{dl})
		}
	}
	return out
}

func breakerKey(endpoint string) string {
	if endpoint == endpointOwner || endpoint == endpointConfirm {
		return breakerSMTP
	}
	return endpoint
}

// breaker is one endpoint's circuit breaker.
type breaker struct {
	failures  int
	openUntil time.Time
	period    time.Duration
}

// record feeds an attempt's result to the endpoint's breaker.
func (d *Dispatcher) record(key string, ok bool, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.breakers[key]
	if b == nil {
		b = &breaker{}
		d.breakers[key] = b
	}
	if ok {
		*b = breaker{}
		return
	}
	b.failures++
	if b.failures >= d.opts.BreakerAfter {
		b.period = min(max(b.period*2, d.opts.BreakerOpen), 10*time.Minute)
		b.openUntil = now.Add(b.period)
		d.opts.Metrics.breakerOpened.Inc()
	}
}

// breakerOpen says whether an endpoint's breaker is open, and until when.
func (d *Dispatcher) breakerOpen(key string, now time.Time) (bool, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := d.breakers[key]; b != nil && now.Before(b.openUntil) {
		return true, b.openUntil
	}
	return false, time.Time{}
}

// finish records deliveries' attempts or deferrals. What senders finish
// while a commit is under way waits for the next, which the sender that
// made the first commits: a busy outbox commits once for many
// deliveries. A failure to record is logged (the lease runs out and the
// delivery is sent again, with the same id).
func (d *Dispatcher) finish(ctx context.Context, fs ...store.Finish) {
	d.fmu.Lock()
	d.finished = append(d.finished, fs...)
	if d.flushing {
		d.fmu.Unlock()
		return
	}
	d.flushing = true
	for len(d.finished) > 0 {
		batch := d.finished
		d.finished = nil
		d.fmu.Unlock()
		if err := d.st.FinishDeliveries(ctx, batch, d.opts.Now()); err != nil {
			d.opts.Logger.Warn("outbox: deliveries not recorded; they are sent again when their leases run out", "deliveries", len(batch), "err", err)
		}
		d.fmu.Lock()
	}
	d.flushing = false
	d.fmu.Unlock()
}

// retryAt is when a delivery that failed its attempt-th attempt is tried
// again, or false once the schedule is spent.
func (d *Dispatcher) retryAt(attempt int, now time.Time, retryAfter time.Duration) (time.Time, bool) {
	if attempt > len(d.opts.Schedule) {
		return time.Time{}, false
	}
	wait := d.opts.Schedule[attempt-1]
	wait += time.Duration((rand.Float64()*0.4 - 0.2) * float64(wait))
	return now.Add(max(wait, retryAfter)), true
}

// outcome is what an attempt did, as the log and the metrics say it.
type outcome struct {
	kind       string // webhook | email
	result     string // delivered | retry | gone | refused
	status     int
	latency    time.Duration
	excerpt    string
	retryAfter time.Duration
	err        error
}

// deliver sends one group (one delivery, or the owner's digest) and
// records the attempt for each of its deliveries.
func (d *Dispatcher) deliver(ctx context.Context, group []store.Delivery, docs entryDocs) {
	start := d.opts.Now()
	o := d.attempt(ctx, group, docs)
	now := d.opts.Now()
	if o.latency == 0 {
		o.latency = now.Sub(start)
	}
	key := breakerKey(group[0].Endpoint)
	if o.result != "deferred" {
		d.record(key, o.result == "delivered", now)
		d.opts.Metrics.observe(o, group[0].Endpoint)
	}
	fs := make([]store.Finish, 0, len(group))
	for _, dl := range group {
		f := store.Finish{DeliveryKey: dl.DeliveryKey, Owner: d.opts.Owner, Counted: true}
		if o.result != "deferred" {
			f.Attempt = store.Attempt{DeliveryKey: dl.DeliveryKey, At: start, Status: o.status, Latency: o.latency, Outcome: o.result, Excerpt: o.excerpt}
		}
		if o.err != nil {
			f.Error = o.err.Error()
		}
		switch o.result {
		case "delivered":
			f.State = store.DeliveryDelivered
		case "deferred":
			f.State, f.NextAt, f.Counted = store.DeliveryPending, now.Add(time.Minute), false
		case "gone", "refused":
			f.State = store.DeliveryFailed
		default:
			if at, ok := d.retryAt(dl.Attempts+1, now, o.retryAfter); ok {
				f.State, f.NextAt = store.DeliveryPending, at
			} else {
				f.State = store.DeliveryFailed
			}
		}
		if f.State == store.DeliveryFailed {
			d.opts.Logger.Warn("outbox: a delivery failed for good and is a dead letter", "form", dl.Event.Form, "endpoint", dl.Endpoint,
				"event", dl.Event.ID(), "attempts", dl.Attempts+1, "err", f.Error)
		}
		fs = append(fs, f)
	}
	if o.result == "gone" {
		d.disable(ctx, group[0], fs, now)
		return
	}
	d.finish(ctx, fs...)
}

// disable records a 410 Gone, then switches its endpoint off (which skips
// the endpoint's pending deliveries). The attempt is committed first, on
// its own, so that the delivery that met the 410 is never seen skipped.
func (d *Dispatcher) disable(ctx context.Context, dl store.Delivery, fs []store.Finish, now time.Time) {
	if err := d.st.FinishDeliveries(ctx, fs, now); err != nil {
		d.opts.Logger.Warn("outbox: a 410 Gone not recorded; the delivery is sent again when its lease runs out", "endpoint", dl.Endpoint, "err", err)
		return
	}
	reason := fmt.Sprintf("the receiver answered 410 Gone at %s: formd stopped delivering to it; fix the URL in the form and enable the endpoint again", now.UTC().Format(time.RFC3339))
	if err := d.st.DisableEndpoint(ctx, dl.Endpoint, dl.Event.Form, reason, now); err != nil {
		d.opts.Logger.Warn("outbox: endpoint not disabled", "endpoint", dl.Endpoint, "err", err)
		return
	}
	d.mu.Lock()
	d.goneAt[dl.Endpoint] = now
	d.mu.Unlock()
	d.opts.Logger.Warn("outbox: an endpoint answered 410 Gone and is disabled", "form", dl.Event.Form, "endpoint", dl.Endpoint)
}

// attempt sends a group once.
func (d *Dispatcher) attempt(ctx context.Context, group []store.Delivery, docs entryDocs) outcome {
	dl := group[0]
	f := d.forms.Get(dl.Event.Form)
	if f == nil {
		return outcome{result: "refused", err: errors.New("the form no longer exists")}
	}
	switch dl.Endpoint {
	case endpointOwner, endpointConfirm:
		return d.sendMail(ctx, f, group, docs)
	}
	for _, w := range d.notifyOf(f).webhooks {
		if w.Endpoint() == dl.Endpoint {
			return d.sendWebhook(ctx, f, dl, w, docs)
		}
	}
	return outcome{kind: "webhook", result: "refused", err: errors.New("the form no longer names this webhook")}
}

// sendWebhook posts one event, signed with every secret of the webhook.
func (d *Dispatcher) sendWebhook(ctx context.Context, f *form.Form, dl store.Delivery, w form.Webhook, docs entryDocs) outcome {
	body, err := d.eventBody(ctx, dl.Event, docs)
	if err != nil {
		return outcome{kind: "webhook", result: "retry", err: err}
	}
	var secrets []webhooks.Secret
	for _, s := range w.AllSecrets() {
		if sec, err := webhooks.ParseSecret(s); err == nil {
			secrets = append(secrets, sec)
		}
	}
	r := d.hooks.Send(ctx, webhooks.Request{URL: w.URL, Secrets: secrets, ID: dl.Event.ID(), Timestamp: d.opts.Now(), Body: body})
	o := outcome{kind: "webhook", status: r.Status, latency: r.Latency, excerpt: r.Excerpt, retryAfter: r.RetryAfter, err: r.Err}
	switch r.Outcome {
	case webhooks.Delivered:
		o.result = "delivered"
	case webhooks.Gone:
		o.result = "gone"
	case webhooks.Refused:
		o.result = "refused"
	default:
		o.result = "retry"
	}
	if o.excerpt == "" && r.Err != nil {
		o.excerpt = r.Err.Error()
	}
	return o
}
