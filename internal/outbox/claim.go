package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// SendOnce claims due deliveries, as many as the workers have room for,
// and starts sending them; it says how many it started. An endpoint gets
// at most PerEndpoint sends at a time, each of a batch of its deliveries
// sent one after another: the claim takes no more of one endpoint than
// PerEndpoint batches, and none of an endpoint with that many waiting or
// whose breaker holds it back (they stay due, in the store, for a later
// claim).
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
// rest back, when the dispatcher stops or the lease would run out before
// another attempt could end (due at once), or when the endpoint's breaker
// holds attempts back (due when it lets one through again).
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
		groups := d.ownerMail(job)
		for i, g := range groups {
			now := d.opts.Now()
			if ctx.Err() != nil {
				d.giveBack(sendCtx, slices.Concat(groups[i:]...), now)
				return
			}
			ok, probe, wait := d.allow(key, now)
			if !ok {
				d.giveBack(sendCtx, slices.Concat(groups[i:]...), wait)
				return
			}
			d.deliver(sendCtx, g, docs, probe)
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
		if ctx.Err() != nil || (i > 0 && now.After(stopAt)) {
			d.giveBack(sendCtx, job[i:], now)
			return
		}
		ok, probe, wait := d.allow(key, now)
		if !ok {
			d.giveBack(sendCtx, job[i:], wait)
			return
		}
		d.deliver(sendCtx, []store.Delivery{dl}, docs, probe)
	}
}

// giveBack returns claimed deliveries unsent, due at next; the attempt is
// not counted.
func (d *Dispatcher) giveBack(ctx context.Context, ds []store.Delivery, next time.Time) {
	back := make([]store.Finish, 0, len(ds))
	for _, dl := range ds {
		back = append(back, store.Finish{DeliveryKey: dl.DeliveryKey, Owner: d.opts.Owner, State: store.DeliveryPending, NextAt: next})
	}
	d.finish(ctx, back...)
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
// or whose breaker holds attempts back. E-mail endpoints are listed by the SMTP
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
		if b.blocked(now) {
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

// idle says whether nothing is claimed and not yet recorded: no send in
// progress and no finished delivery waiting for its commit.
func (d *Dispatcher) idle() bool {
	d.mu.Lock()
	inFlight := d.inFlight
	d.mu.Unlock()
	d.fmu.Lock()
	defer d.fmu.Unlock()
	return inFlight == 0 && !d.flushing && len(d.finished) == 0
}
