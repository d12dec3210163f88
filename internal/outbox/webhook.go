package outbox

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/webhooks"
)

// webhookChannel posts events, signed the Standard Webhooks way, to the
// URLs of notify.webhooks.
type webhookChannel struct{ d *Dispatcher }

func (webhookChannel) Kind() string { return "webhook" }

func (webhookChannel) Owns(endpoint string) bool { return strings.HasPrefix(endpoint, "webhook:") }

func (webhookChannel) Endpoints(blocks []*form.Notify, typ string) []string {
	var out []string
	for _, w := range webhooksOf(blocks) {
		if ep := w.Endpoint(); w.Wants(typ) && !slices.Contains(out, ep) {
			out = append(out, ep)
		}
	}
	return out
}

func webhooksOf(blocks []*form.Notify) []form.Webhook {
	var out []form.Webhook
	for _, b := range blocks {
		if b != nil {
			out = append(out, b.Webhooks...)
		}
	}
	return out
}

// Send posts one event, signed with every secret of the webhook. Every
// retry is the receiver's fault, for its breaker: a timeout, a refused
// connection, a 5xx.
func (c webhookChannel) Send(ctx context.Context, j *Job) Outcome {
	for _, w := range webhooksOf(j.Blocks) {
		if w.Endpoint() == j.Endpoint {
			return c.send(ctx, j, w)
		}
	}
	return Outcome{Outcome: attempt.Refused, Err: errors.New("the form no longer names this webhook")}
}

func (c webhookChannel) send(ctx context.Context, j *Job, w form.Webhook) Outcome {
	d, dl := c.d, j.Group[0]
	body, err := d.eventBody(ctx, dl.Event, j.docs)
	if err != nil {
		return Outcome{Outcome: attempt.Retry, Err: err}
	}
	var secrets []webhooks.Secret
	for _, s := range w.AllSecrets() {
		if sec, err := webhooks.ParseSecret(s); err == nil {
			secrets = append(secrets, sec)
		}
	}
	res := d.hooks.Send(ctx, webhooks.Request{URL: w.URL, Secrets: secrets, ID: dl.Event.ID(), Timestamp: d.opts.Now(), Body: body})
	return FromResult(res)
}

// FromResult is the Outcome of an HTTP attempt: every retry is the
// receiver's fault, for its breaker, but the dispatcher's own stop.
func FromResult(res webhooks.Result) Outcome {
	return Outcome{Outcome: res.Outcome, Fault: res.Outcome == attempt.Retry && !errors.Is(res.Err, context.Canceled),
		Status: res.Status, Latency: res.Latency, Excerpt: res.Excerpt, RetryAfter: res.RetryAfter, Err: res.Err}
}
