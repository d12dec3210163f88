package outbox

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/ticket"
)

// errNoSMTP keeps e-mail deliveries waiting while no SMTP server is set.
var errNoSMTP = errors.New("no SMTP server is set (--smtp): the e-mail waits")

// statusWord is an event's status as the mails say it.
func statusWord(e store.Event) string {
	switch e.Type {
	case store.EventPromoted:
		return "promoted"
	case store.EventCancelled:
		return "cancelled"
	case store.EventApproved:
		return "approved"
	}
	return e.Status
}

// mailChannel sends the owner's mail (endpointOwner: one a minute per
// entry, or a digest) and the person's confirmation (endpointConfirm),
// through one SMTP server and so one breaker (breakerSMTP).
type mailChannel struct{ d *Dispatcher }

func (mailChannel) Kind() string { return "email" }

func (mailChannel) Owns(endpoint string) bool {
	return endpoint == endpointOwner || endpoint == endpointConfirm
}

func (mailChannel) Endpoints(blocks []*form.Notify, typ string) []string {
	n := mergeNotify(blocks)
	var out []string
	if len(n.to) > 0 && (typ == store.EventStored || typ == store.EventWaitlisted || typ == store.EventPending) {
		out = append(out, endpointOwner)
	}
	// A form with review tells the person once it is decided (approved,
	// declined), not when it is received pending; the erasure of their
	// data, when they asked for it, is told to them alone.
	if n.confirm != "" && (typ == store.EventStored || typ == store.EventWaitlisted || typ == store.EventPromoted ||
		typ == store.EventApproved || typ == store.EventDeclined || typ == store.EventErased) {
		out = append(out, endpointConfirm)
	}
	return out
}

func (c mailChannel) Send(ctx context.Context, j *Job) Outcome {
	return c.d.sendMail(ctx, j.Form, j.Group, j.docs)
}

// sendMail sends the owner's mail (one entry, or a digest of the group),
// the person's confirmation, or the mail telling them their data was
// erased.
func (d *Dispatcher) sendMail(ctx context.Context, f *form.Form, group []store.Delivery, docs entryDocs) (o Outcome) {
	if d.mail == nil {
		o.Outcome, o.Err = attempt.Deferred, errNoSMTP
		return o
	}
	setup := d.notifyOf(f)
	if len(setup.to) == 0 && setup.confirm == "" {
		o.Outcome, o.Err = attempt.Refused, errors.New("the form no longer sends e-mail")
		return o
	}
	lang := setup.lang
	title := f.Def.Title.For(lang)
	if title == "" {
		title = f.ID()
	}
	first := group[0]
	var msg email.Message
	switch {
	case first.Event.Type == store.EventErased:
		// The entry holds no address any more: the event carries it,
		// until this delivery is finished (the store clears it then).
		addr := first.NoticeTo
		if addr == "" {
			o.Outcome, o.Err = attempt.Skipped, errors.New("not sent: the address is deleted (its delivery was finished before)")
			o.Excerpt = o.Err.Error()
			return o
		}
		// What an attempt records (the error, the server's answer) must
		// not keep the address the erasure removed.
		defer func() { o = scrub(o, addr) }()
		if skip, err := d.confirmable(ctx, f, first, addr); err != nil {
			o.Outcome, o.Err = attempt.Retry, err
			return o
		} else if skip != "" {
			o.Outcome, o.Err, o.Excerpt = attempt.Skipped, errors.New(skip), skip
			return o
		}
		if msg, o.Err = d.render(email.Erasure, lang, email.ErasureView{FormTitle: title, ErasedAt: first.Event.At}); o.Err != nil {
			o.Outcome = attempt.Refused
			return o
		}
		msg.To = []string{addr}
		msg.MessageID = "<" + first.Event.ID() + ".notice@formd>"
	case first.Endpoint == endpointConfirm:
		doc, err := d.entry(ctx, docs, first.Event.EntryID)
		if err != nil {
			o.Outcome, o.Err = attempt.Retry, err
			return o
		}
		addr := fieldText(values(doc)[setup.confirm])
		if addr != "" {
			// As for the erasure's mail: the delivery log never keeps
			// the person's address, which an erasure could not reach
			// there.
			defer func() { o = scrub(o, addr) }()
		}
		if addr == "" {
			// The address is the person's to give or not: without one
			// there is no one to confirm to, and nothing failed.
			o.Outcome, o.Err = attempt.Skipped, fmt.Errorf("not sent: the entry has no address in %s (erased, or left empty)", setup.confirm)
			o.Excerpt = o.Err.Error()
			return o
		}
		if skip, err := d.confirmable(ctx, f, first, addr); err != nil {
			o.Outcome, o.Err = attempt.Retry, err
			return o
		} else if skip != "" {
			o.Outcome, o.Err, o.Excerpt = attempt.Skipped, errors.New(skip), skip
			return o
		}
		v := email.ConfirmationView{FormTitle: title, Status: statusWord(first.Event), ReceivedAt: doc.ReceivedAt,
			Receipt: hex.EncodeToString(doc.Receipt[:]), Fields: fieldValues(f, lang, doc), ManageURL: d.manageURL(f.ID(), doc.ID),
			TicketCode: d.ticketCode(f, doc.ID, first.Event.Status)}
		if msg, o.Err = d.render(email.Confirmation, lang, v); o.Err != nil {
			o.Outcome = attempt.Refused
			return o
		}
		msg.To = []string{addr}
		msg.MessageID = "<" + first.Event.ID() + ".confirm@formd>"
	case len(group) > 1:
		v := email.DigestView{FormID: f.ID(), FormTitle: title, Count: len(group), Start: first.Event.At, End: group[len(group)-1].Event.At,
			ConsoleURL: d.consoleURL("forms", f.ID(), "submissions")}
		for _, dl := range group {
			doc, err := d.entry(ctx, docs, dl.Event.EntryID)
			if err != nil {
				o.Outcome, o.Err = attempt.Retry, err
				return o
			}
			if len(v.Entries) < email.MaxDigestRows {
				v.Entries = append(v.Entries, email.DigestEntry{ID: doc.ID, ReceivedAt: doc.ReceivedAt, Status: statusWord(dl.Event), Fields: fieldValues(f, lang, doc)})
			}
		}
		if msg, o.Err = d.render(email.Digest, lang, v); o.Err != nil {
			o.Outcome = attempt.Refused
			return o
		}
		msg.To = setup.to
		msg.MessageID = "<" + first.Event.ID() + ".digest-" + fmt.Sprint(len(group)) + "@formd>"
	default:
		doc, err := d.entry(ctx, docs, first.Event.EntryID)
		if err != nil {
			o.Outcome, o.Err = attempt.Retry, err
			return o
		}
		v := email.EntryView{FormID: f.ID(), FormTitle: title, Status: statusWord(first.Event), ID: doc.ID, Key: doc.Key, ReceivedAt: doc.ReceivedAt,
			Receipt: hex.EncodeToString(doc.Receipt[:]), Fields: fieldValues(f, lang, doc), ConsoleURL: d.consoleURL("forms", f.ID(), "submissions", doc.ID)}
		if v.Files, err = d.ownerFiles(ctx, f, doc, v.Fields); err != nil {
			o.Outcome, o.Err = attempt.Retry, err
			return o
		}
		if msg, o.Err = d.render(email.Entry, lang, v); o.Err != nil {
			o.Outcome = attempt.Refused
			return o
		}
		msg.To = setup.to
		msg.MessageID = "<" + first.Event.ID() + ".owner@formd>"
	}
	msg.Headers = map[string]string{"X-Formd-Form": f.ID()}
	start := d.opts.Now()
	err := d.mail.Send(ctx, msg)
	o.Latency = d.opts.Now().Sub(start)
	switch {
	case err == nil:
		o.Outcome, o.Status = attempt.Delivered, 250
	case email.IsPermanent(err) && !email.IsTransport(err):
		// This message or recipient is refused (a 5xx to RCPT TO or
		// DATA): that delivery alone fails. A 5xx to the session (such
		// as a refused password) is the server's, retried below.
		o.Outcome, o.Err = attempt.Refused, err
	default:
		// Only a failure of the server as a whole counts against the
		// SMTP breaker, not one recipient's.
		o.Outcome, o.Err, o.Fault = attempt.Retry, err, email.IsTransport(err)
	}
	var me *email.Error
	if errors.As(err, &me) {
		o.Status = me.Code
	}
	if err != nil {
		o.Excerpt = err.Error()
	}
	return o
}

// scrub takes the address out of what an attempt records.
func scrub(o Outcome, addr string) Outcome {
	re := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(addr))
	const erased = "(the person's address)"
	if o.Err != nil && re.MatchString(o.Err.Error()) {
		o.Err = errors.New(re.ReplaceAllString(o.Err.Error(), erased))
	}
	o.Excerpt = re.ReplaceAllString(o.Excerpt, erased)
	return o
}

// render makes a message's subject and bodies.
func (d *Dispatcher) render(k email.Kind, lang string, v any) (email.Message, error) {
	subject, text, html, err := email.Render(k, lang, v, d.opts.Location)
	if err != nil {
		return email.Message{}, fmt.Errorf("render %s mail: %w", k, err)
	}
	return email.Message{Subject: subject, Text: text, HTML: html}, nil
}

// consoleURL links into the console, or is empty without its address.
func (d *Dispatcher) consoleURL(parts ...string) string {
	if d.opts.ConsoleURL == "" {
		return ""
	}
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.TrimRight(d.opts.ConsoleURL, "/") + "/admin/" + strings.Join(parts, "/")
}

// manageURL is the participant's link to an entry, as its first answer
// gives it (entrylink), made absolute with the public URL; "" without
// one, as a mail cannot carry a relative link.
func (d *Dispatcher) manageURL(formID, id string) string {
	if d.opts.ConsoleURL == "" || d.opts.Hasher == nil {
		return ""
	}
	return strings.TrimRight(d.opts.ConsoleURL, "/") + entrylink.PagePath(entrylink.Token(d.opts.Hasher, formID, id))
}

// ticketCode is the short code of an entry's ticket for its confirmation:
// on a form with check-in, for an event that left the entry stored (a
// new entry, a promotion, an approval); "" otherwise, or without the
// installation's secret.
func (d *Dispatcher) ticketCode(f *form.Form, id, status string) string {
	if !f.Def.Checkin || d.opts.Hasher == nil || !ticket.Valid(status) {
		return ""
	}
	return ticket.Code(d.opts.Hasher, f.ID(), id)
}

// fieldValues lists an entry's values in the form's order with their
// labels in the mail's language.
func fieldValues(f *form.Form, lang string, doc store.EntryDoc) []email.FieldValue {
	m := values(doc)
	var out []email.FieldValue
	for _, fd := range f.Fields() {
		label := fd.Label.For(lang)
		if label == "" {
			label = fd.Name
		}
		var v any
		if raw, ok := m[fd.Name]; ok {
			v = raw
		}
		out = append(out, email.FieldValue{Label: label, Value: v})
	}
	return out
}

// fieldText is a JSON string value as text, "" for anything else.
func fieldText(raw []byte) string {
	s := string(raw)
	if len(s) < 2 || s[0] != '"' {
		return ""
	}
	var out string
	if err := json.Unmarshal(raw, &out); err != nil {
		return ""
	}
	return out
}
