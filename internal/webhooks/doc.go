// Package webhooks sends formd's webhook deliveries: one HTTP POST per
// attempt, signed per Standard Webhooks, to an address that is checked
// when it is dialled. It makes one attempt at a time and says what
// happened; the outbox dispatcher that calls it owns the schedule, so
// that retries survive a restart and every event is delivered at least
// once (receivers deduplicate by the webhook-id header).
//
// # Standard Webhooks
//
// Standard Webhooks (https://www.standardwebhooks.com) is a common
// convention for signing webhooks, with verifying libraries in many
// languages, so that a receiver need not learn a scheme peculiar to
// formd. Each request carries three headers:
//
//   - webhook-id: the event's stable id, the same on every attempt, which
//     receivers use to drop a message they already have;
//   - webhook-timestamp: the attempt's time in Unix seconds, which
//     receivers compare with their clock to refuse replays;
//   - webhook-signature: "v1," and the base64 HMAC-SHA256 of
//     "{id}.{timestamp}.{body}" under the endpoint's secret; several
//     such signatures separated by spaces while a secret is rotated, one
//     per active secret, so that receivers holding the old or the new
//     secret both verify.
//
// Secrets are written "whsec_" followed by standard base64 of 24 to 64
// random bytes (ParseSecret, NewSecret). Sign and Verify implement the
// signature; examples/webhook-receiver shows a receiver with the
// standard library alone.
//
// # Address safety
//
// A webhook URL is chosen by whoever edits a form, and the request leaves
// from inside the operator's network. Without a check, a URL could point
// formd at its own admin API, a database beside it, or the cloud
// provider's metadata service (169.254.169.254), which hands out
// credentials: server-side request forgery. The Guard refuses loopback,
// private, shared (CGNAT), link-local, unique-local, multicast, reserved
// and metadata addresses, in IPv4 and every IPv6 spelling of them.
//
// Checking the URL when the form is saved is not enough: a name can
// resolve to a public address then and to 127.0.0.1 a minute later (DNS
// rebinding), and a receiver can redirect. So the Guard runs in the
// dialer's Control hook, on the very address each connection is made to,
// after DNS and before the first packet; redirects are never followed;
// proxies from the environment are never used, since a proxy would dial
// for formd, past the check. ValidateURL and Guard.CheckURL still refuse
// literal addresses early, so that a mistake shows when the form is
// applied. An allow-list (--webhook-allow) lets tests and on-premise
// receivers through on purpose.
//
// # Outcomes
//
// Send answers a Result whose Outcome (an attempt.Outcome, the one word
// for an attempt's outcome that the dispatcher, the store and the metrics
// use too) tells the dispatcher what to do: Delivered (a 2xx within the timeout), Retry (with the receiver's
// Retry-After on 429 and 503), Gone (410: disable the endpoint) or
// Refused (retrying cannot help). Only the status counts; at most 4 KiB
// of the answer is read, and a short, sanitised excerpt is kept for the
// delivery log.
package webhooks
