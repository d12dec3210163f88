package form

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"slices"
	"strings"

	"github.com/formd/formd/internal/webhooks"
)

// Notify is who hears of a form's entries, as the definition's notify
// block says: webhooks to the owner's systems, and e-mail to the owner and
// to the person.
type Notify struct {
	Webhooks []Webhook   `yaml:"webhooks" json:"webhooks,omitempty"`
	Email    *EmailSetup `yaml:"email" json:"email,omitempty"`
	// The chat groups' robots (chat.go).
	Slack    []ChatBot `yaml:"slack" json:"slack,omitempty"`
	WeCom    []ChatBot `yaml:"wecom" json:"wecom,omitempty"`
	DingTalk []ChatBot `yaml:"dingtalk" json:"dingtalk,omitempty"`
	Feishu   []ChatBot `yaml:"feishu" json:"feishu,omitempty"`
}

// Webhook is one endpoint that receives a form's events, signed the
// Standard Webhooks way.
type Webhook struct {
	URL string `yaml:"url" json:"url"`
	// Secret signs the deliveries (whsec_…); Secrets lists several during
	// a rotation, each signing, so receivers knowing either verify.
	Secret  string   `yaml:"secret" json:"-"`
	Secrets []string `yaml:"secrets" json:"-"`
	// Events are the event types sent; by default every event of an
	// entry but spam.
	Events []string `yaml:"events" json:"events,omitempty"`
}

// EmailSetup is a form's e-mail: each new entry to the owner (To), a
// digest instead when more than DigestOver arrive in a minute, and a
// confirmation with the receipt to the address the person gave in the
// field Confirm, in Lang (zh or en).
type EmailSetup struct {
	To         []string `yaml:"to" json:"to,omitempty"`
	Confirm    string   `yaml:"confirm" json:"confirm,omitempty"`
	DigestOver int      `yaml:"digest_over" json:"digest_over,omitempty"`
	Lang       string   `yaml:"lang" json:"lang,omitempty"`
}

// ConfirmField is the field of f holding the address its confirmations
// go to (notify.email.confirm of the form itself, as the outbox reads
// it), or "" when the form sends the person no e-mail.
func (f *Form) ConfirmField() string {
	if f == nil || f.Def.Notify == nil || f.Def.Notify.Email == nil {
		return ""
	}
	return f.Def.Notify.Email.Confirm
}

// Event types a webhook may ask for (package store names them too). The
// erasure's notice (submission.erased) is not one: only the e-mail to the
// person delivers it.
var webhookEvents = []string{"submission.stored", "submission.waitlisted", "submission.promoted", "submission.cancelled", "submission.spam",
	"submission.pending", "submission.approved", "submission.declined", "submission.updated",
	"submission.checked_in"}

// DefaultWebhookEvents are the events a webhook gets when it names none:
// everything that happens to an entry, but spam (submission.updated is a
// participant's change of their answers).
var DefaultWebhookEvents = []string{"submission.stored", "submission.waitlisted", "submission.promoted", "submission.cancelled",
	"submission.pending", "submission.approved", "submission.declined", "submission.updated",
	"submission.checked_in"}

// DefaultDigestOver is how many new entries in a minute an owner gets one
// mail each for; beyond, one digest a minute (a peak of 3,000 must not
// send 3,000 mails).
const DefaultDigestOver = 10

// AllSecrets are the webhook's signing secrets, Secret first.
func (w Webhook) AllSecrets() []string {
	var out []string
	if w.Secret != "" {
		out = append(out, w.Secret)
	}
	return append(out, w.Secrets...)
}

// Endpoint is the webhook's endpoint id in the outbox: named by its URL,
// which stays while its secret rotates.
func (w Webhook) Endpoint() string {
	sum := sha256.Sum256([]byte(w.URL))
	return "webhook:" + hex.EncodeToString(sum[:8])
}

// Wants says whether the webhook gets events of this type.
func (w Webhook) Wants(typ string) bool {
	if len(w.Events) == 0 {
		return slices.Contains(DefaultWebhookEvents, typ)
	}
	return slices.Contains(w.Events, typ)
}

// checkNotify checks a notify block: URLs with checkURL (the server's
// guard, which knows its allow-list) or their syntax alone, secrets in
// whsec_ form, events by name, e-mail addresses, the confirmation field.
func (c *compiler) checkNotify(n *Notify, f *Form, checkURL func(string) error) {
	if n == nil {
		return
	}
	if checkURL == nil {
		checkURL = webhooks.CheckSyntax
	}
	for i, w := range n.Webhooks {
		at := fmt.Sprintf("notify.webhooks[%d]", i)
		if err := checkURL(w.URL); err != nil {
			c.add("", fmt.Sprintf("%s.url: %s", at, strings.TrimPrefix(err.Error(), "check webhook url: ")))
		} else if p := ChatPlatformOf(w.URL); p != "" {
			c.add("", fmt.Sprintf("%s.url is a %s robot's URL, which does not take formd's webhook events: list it under notify.%s", at, platformName(p), p))
		}
		secrets := w.AllSecrets()
		if len(secrets) == 0 {
			c.add("", fmt.Sprintf("%s.secret is missing: give each webhook a secret such as %s (formd webhook-secret makes one)", at, "whsec_…"))
		}
		for _, s := range secrets {
			if _, err := webhooks.ParseSecret(s); err != nil {
				c.add("", fmt.Sprintf("%s.secret: %v", at, err))
			}
		}
		for _, e := range w.Events {
			if !slices.Contains(webhookEvents, e) {
				c.add("", fmt.Sprintf("%s.events: %q is not an event; use any of %s", at, e, strings.Join(webhookEvents, ", ")))
			}
		}
	}
	c.checkChat(n, f, checkURL)
	e := n.Email
	if e == nil {
		return
	}
	if len(e.To) > MaxEmailRecipients {
		c.add("", fmt.Sprintf("notify.email.to lists %d addresses: at most %d; send to a mailing list instead", len(e.To), MaxEmailRecipients))
	}
	for i, to := range e.To {
		if i == MaxEmailRecipients {
			break // one error for the list is enough
		}
		if a, err := mail.ParseAddress(to); err != nil || a.Name != "" || a.Address != to {
			c.add("", fmt.Sprintf("notify.email.to: %q is not an e-mail address such as owner@example.org", to))
		} else if err := Deliverable(to); err != nil {
			c.add("", fmt.Sprintf("notify.email.to: %q %v", to, err))
		}
	}
	if e.Confirm != "" && f != nil {
		if i, ok := f.byName[e.Confirm]; !ok || f.fields[i].Type != TypeEmail {
			c.add("", fmt.Sprintf("notify.email.confirm: %q is not an e-mail field of this form; name the field people give their address in", e.Confirm))
		}
	}
	if len(e.To) == 0 && e.Confirm == "" {
		c.add("", "notify.email needs to (the owner's addresses) or confirm (the field of the person's address), or both")
	}
	if e.DigestOver < 0 {
		c.add("", "notify.email.digest_over must be 0 or more")
	}
	if e.Lang != "" && e.Lang != "en" && e.Lang != "zh" {
		c.add("", fmt.Sprintf("notify.email.lang %q is not known: use en or zh", e.Lang))
	}
}
