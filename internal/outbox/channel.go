package outbox

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// Channel is one kind of delivery: webhooks and e-mail here, the chat
// platforms' robots in packages of their own (internal/channels/…). The
// dispatcher owns everything around an attempt — the outbox rows, the
// retry schedule, the breaker, dead letters, metrics — and asks the
// channel only what a form's notify blocks make of an event and how one
// attempt went.
type Channel interface {
	// Kind names the channel in metrics and logs: webhook, email, slack…
	Kind() string
	// Endpoints lists the endpoint ids of the notify blocks (the form's
	// first, then its site's; either may be nil) that get an event of
	// type typ. An id is stable while the endpoint is the same (a
	// webhook's URL, not its rotating secret) and says its channel.
	Endpoints(blocks []*form.Notify, typ string) []string
	// Owns says whether an endpoint id is one of this channel's.
	Owns(endpoint string) bool
	// Send makes one attempt to deliver the job and says what it did.
	Send(ctx context.Context, j *Job) Outcome
}

// Outcome is what one attempt did, for the delivery log, the breaker,
// the retry schedule and the metrics.
type Outcome struct {
	// Outcome decides what follows: Delivered, Retry (with backoff, then
	// a dead letter), Refused (a dead letter now), Gone (the endpoint is
	// switched off), Skipped, Deferred (not an attempt: due again soon).
	Outcome attempt.Outcome
	// Fault says a retry is the endpoint's as a whole (a receiver
	// failing, the SMTP server unreachable), not one message's or
	// recipient's: only then does the breaker count it.
	Fault bool
	// Status is the protocol's status (HTTP, SMTP), 0 for none.
	Status int
	// Code is the platform's own result code when it answered one
	// that is not success (a robot's errcode with HTTP 200).
	Code    string
	Latency time.Duration
	// Excerpt is what the delivery log shows of the answer.
	Excerpt    string
	RetryAfter time.Duration
	Err        error
}

// Job is one attempt's work: a group of deliveries to one endpoint (one
// delivery, or the owner's digest) of one form.
type Job struct {
	Form     *form.Form
	Blocks   []*form.Notify
	Endpoint string
	Group    []store.Delivery

	d    *Dispatcher
	docs entryDocs
}

// Entry reads the entry of a delivery's event, as it is now.
func (j *Job) Entry(ctx context.Context, dl store.Delivery) (store.EntryDoc, error) {
	return j.d.entry(ctx, j.docs, dl.Event.EntryID)
}

// Now is the dispatcher's clock.
func (j *Job) Now() time.Time { return j.d.opts.Now() }

// ConsoleURL links to a page of the console, or is empty without its
// address (--public-url).
func (j *Job) ConsoleURL(parts ...string) string { return j.d.consoleURL(parts...) }

// Field is one field's label and value as text, for a message.
type Field struct {
	Name, Label, Value string
}

// Fields are the values of the named fields of an entry, in that order,
// labelled in lang: only what the owner listed, so that a message
// carries no more of a person's data than the owner chose. A name the
// form does not define (a site's robot listing another form's field) is
// left out.
func Fields(f *form.Form, doc store.EntryDoc, names []string, lang string) []Field {
	m := values(doc)
	var out []Field
	for _, name := range names {
		for _, fd := range f.Fields() {
			if fd.Name != name {
				continue
			}
			label := fd.Label.For(lang)
			if label == "" {
				label = name
			}
			out = append(out, Field{Name: name, Label: label, Value: valueText(m[name])})
		}
	}
	return out
}

// valueText is a JSON value as a person reads it: a string as itself, a
// list joined by commas, nothing as "—".
func valueText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "—"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			b, _ := json.Marshal(e)
			parts = append(parts, valueText(b))
		}
		return strings.Join(parts, ", ")
	}
	return string(raw)
}

// channelOf is the channel an endpoint id belongs to, or nil.
func (d *Dispatcher) channelOf(endpoint string) Channel {
	for _, c := range d.channels {
		if c.Owns(endpoint) {
			return c
		}
	}
	return nil
}

// blocksOf are the notify blocks of a form: its own, then its site's.
func (d *Dispatcher) blocksOf(f *form.Form) []*form.Notify {
	blocks := []*form.Notify{f.Def.Notify}
	if site := d.forms.Site(f.Def.Site); site != nil {
		blocks = append(blocks, site.Def.Notify)
	}
	return blocks
}

// Location is the time zone of times in messages (--timezone).
func (j *Job) Location() *time.Location { return j.d.opts.Location }
