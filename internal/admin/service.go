package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"go.yaml.in/yaml/v3"
)

// The actions below are the admin API's and the console's alike: each
// checks nothing the caller has not (Authorize does, once), does one
// thing, and records it in the audit log.

// Authorize finds a form the principal may act on: a form outside its
// sites is not found (so a URL reveals nothing), an action its role does
// not allow there is forbidden.
func (h *Handler) Authorize(p accounts.Principal, formID string, action accounts.Action) (*form.Form, error) {
	f := h.Forms.Get(formID)
	// A door's principal (a door token) sees the forms it checks in at,
	// and reads nothing else.
	if f == nil || (!p.Can(accounts.Read, f.Def.Site) && !p.Can(accounts.CheckIn, f.Def.Site)) {
		return nil, problem.New(problem.CodeFormNotFound, "")
	}
	if !p.Can(action, f.Def.Site) {
		return nil, accounts.ErrForbidden
	}
	return f, nil
}

// VisibleForms are the forms the principal may read, by id.
func (h *Handler) VisibleForms(p accounts.Principal) []*form.Form {
	var out []*form.Form
	for _, f := range h.Forms.All() {
		if p.Can(accounts.Read, f.Def.Site) {
			out = append(out, f)
		}
	}
	return out
}

// ApplyForms checks definitions (YAML or JSON) and stores them; the
// change reaches every instance within the forms refresh interval. A
// definition that does not check is refused whole with every problem
// named (invalid-form-definition).
//
// A change that reaches entries already collected (the plan's risks) is
// applied only when confirm is the plan's token, as forms apply --yes and
// the console's confirmation give it; otherwise nothing changes and the
// answer is confirmation-required, naming the risks and the token.
func (h *Handler) ApplyForms(ctx context.Context, p accounts.Principal, raw []byte, confirm string) ([]string, error) {
	restored, set, err := h.CheckDefinitions(p, raw)
	if err != nil {
		return nil, err
	}
	plan, err := h.PlanAgainst(ctx, set)
	if err != nil {
		return nil, err
	}
	if pj := planJSON(plan, restored); len(plan.Risks) > 0 && confirm != pj.Confirm {
		return nil, confirmationRequired(pj)
	}
	return h.putForms(ctx, call{p: p}, set, "forms.apply")
}

// RestoreSecrets puts the stored webhook secrets back where a definition
// sent by someone who could not read them (DefinitionFor) still has the
// placeholder; a placeholder with no secret to keep is
// invalid-form-definition, saying so.
func (h *Handler) RestoreSecrets(p accounts.Principal, raw []byte) ([]byte, error) {
	out, err := form.RestoreSecrets(raw, h.knownWebhooks(p))
	if err != nil {
		return nil, problem.New(problem.CodeInvalidDefinition, err.Error())
	}
	return out, nil
}

// knownWebhooks finds the stored webhook of a url among the forms and
// sites the principal may edit, for a definition sent back with its
// secrets hidden (form.RestoreSecrets).
func (h *Handler) knownWebhooks(p accounts.Principal) func(url string) (form.Webhook, bool) {
	return func(url string) (form.Webhook, bool) {
		var notifies []*form.Notify
		for _, f := range h.Forms.All() {
			if p.Can(accounts.EditForms, f.Def.Site) {
				notifies = append(notifies, f.Def.Notify)
				if s := h.Forms.Site(f.Def.Site); s != nil {
					notifies = append(notifies, s.Def.Notify)
				}
			}
		}
		for _, n := range notifies {
			if n == nil {
				continue
			}
			for _, w := range n.Webhooks {
				if w.URL == url || form.MaskURL(w.URL) == url {
					return w, true
				}
			}
			// A chat robot's secret is kept the same way, by its URL.
			for _, kind := range form.ChatKinds {
				for _, b := range n.Bots(kind) {
					if b.URL == url || form.MaskChatURL(b.URL) == url {
						return form.Webhook{URL: b.URL, Secret: b.Secret}, true
					}
				}
			}
		}
		return form.Webhook{}, false
	}
}

// putForms stores checked forms and sites and records action.
func (h *Handler) putForms(ctx context.Context, c call, set form.Set, action string) ([]string, error) {
	ids := set.IDs()
	// A new form (created, or a copy) claims its id in the database, so
	// two made at once under one id cannot both win.
	note := store.FormNote{By: c.p.String(), Action: action, Summary: h.changeSummary(set), Create: action == "form.create" || action == "form.duplicate"}
	if err := h.Store.PublishForms(ctx, set.Records(), note); err != nil {
		return nil, fmt.Errorf("apply forms: %w", err)
	}
	if len(set.Forms) == 1 && len(set.Sites) == 0 && c.form == nil {
		c.form = set.Forms[0]
	}
	if err := h.audit(ctx, c, action, strings.Join(ids, ","), ""); err != nil {
		return nil, err
	}
	if err := h.Forms.Refresh(ctx); err != nil {
		h.Log.Warn("forms applied; local refresh failed, the next periodic refresh will load them", "err", err)
	}
	return ids, nil
}

// SetOpen opens a form now (an opens_at still ahead becomes now, a
// closes_at already passed goes) or closes it now (closes_at becomes
// now), by changing its stored definition: every instance sees it, and
// the definition says what happened. The rest of the YAML stays as the
// owner wrote it.
func (h *Handler) SetOpen(ctx context.Context, p accounts.Principal, f *form.Form, open bool) error {
	now := h.Now().UTC().Truncate(time.Second)
	var doc yaml.Node
	if err := yaml.Unmarshal(f.Source(), &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("open or close %s: its stored definition is not one YAML mapping", f.ID())
	}
	m := doc.Content[0]
	stamp := now.Format(time.RFC3339)
	action := "form.close"
	if open {
		action = "form.open"
		if f.Def.OpensAt != nil && now.Before(*f.Def.OpensAt) {
			setKey(m, "opens_at", stamp)
		}
		if f.Def.ClosesAt != nil && !now.Before(*f.Def.ClosesAt) {
			deleteKey(m, "closes_at")
		}
	} else {
		if f.Def.OpensAt != nil && now.Before(*f.Def.OpensAt) {
			deleteKey(m, "opens_at")
		}
		setKey(m, "closes_at", stamp)
	}
	src, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("open or close %s: %w", f.ID(), err)
	}
	forms, err := form.Parse(src, "")
	if err != nil {
		return fmt.Errorf("open or close %s: %w", f.ID(), err)
	}
	_, err = h.putForms(ctx, call{p: p, form: f}, form.Set{Forms: forms}, action)
	return err
}

func setKey(m *yaml.Node, key, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

func deleteKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// Cancel cancels a stored or waitlisted entry; the waitlist is promoted
// into the freed place. It returns the promoted entries.
func (h *Handler) Cancel(ctx context.Context, p accounts.Principal, f *form.Form, id string) ([]string, error) {
	promoted, err := h.Store.Cancel(ctx, f.ID(), id)
	if err != nil {
		return nil, err
	}
	return promoted, h.audit(ctx, call{p: p, form: f}, "entry.cancel", id, promotedDetail(promoted))
}

// Review approves or declines a pending entry, once; a decline frees its
// place and promotes the waitlist (the promoted entries are returned).
func (h *Handler) Review(ctx context.Context, p accounts.Principal, f *form.Form, id string, approve bool) ([]string, error) {
	promoted, err := h.Store.Review(ctx, f.ID(), id, approve)
	if err != nil {
		return nil, err
	}
	action := "entry.decline"
	if approve {
		action = "entry.approve"
	}
	return promoted, h.audit(ctx, call{p: p, form: f}, action, id, promotedDetail(promoted))
}

// MarkSpam takes a live entry out as spam; the waitlist is promoted.
func (h *Handler) MarkSpam(ctx context.Context, p accounts.Principal, f *form.Form, id string) ([]string, error) {
	promoted, err := h.Store.MarkSpam(ctx, f.ID(), id)
	if err != nil {
		return nil, err
	}
	return promoted, h.audit(ctx, call{p: p, form: f}, "entry.spam", id, promotedDetail(promoted))
}

// NotSpam decides an entry classed as spam again as a real submission.
func (h *Handler) NotSpam(ctx context.Context, p accounts.Principal, f *form.Form, id string) (store.Outcome, error) {
	o, err := h.Store.NotSpam(ctx, f.ID(), id)
	if err != nil {
		return o, err
	}
	return o, h.audit(ctx, call{p: p, form: f}, "entry.not-spam", id, "decided "+o.Status)
}

// RetryDeadLetter forgets a dead-lettered outcome and decides the
// journal entry again.
func (h *Handler) RetryDeadLetter(ctx context.Context, p accounts.Principal, f *form.Form, key string) error {
	ok, err := h.Store.ForgetDeadLetter(ctx, f.ID(), key)
	if err != nil {
		return err
	}
	if !ok {
		return problem.New(problem.CodeEntryNotFound, "no dead letter for this form and key")
	}
	if err := h.audit(ctx, call{p: p, form: f}, "dead-letter.retry", key, ""); err != nil {
		return err
	}
	return h.Redrive(ctx, f.ID(), key)
}

// ForgetPerson erases every entry, on the sites the principal may forget
// on, of one e-mail address or phone number; a dry run only finds them.
// The audit log says whom by kind only: it must not keep what was erased.
func (h *Handler) ForgetPerson(ctx context.Context, p accounts.Principal, who erasure.Person, dryRun bool) (erasure.Report, error) {
	allow := func(site string) bool { return p.Can(accounts.Forget, site) }
	rep, err := h.Forget(ctx, who, allow, dryRun)
	var ie *erasure.InputError
	if errors.As(err, &ie) {
		return rep, problem.New(problem.CodeInvalidRequest, ie.Error())
	}
	if err != nil {
		return rep, err
	}
	if !dryRun {
		if err := h.audit(ctx, call{p: p}, "person.forget", rep.What, rep.Detail()); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
