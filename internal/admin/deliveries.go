package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// OutboxStore is the part of the store the deliveries API uses.
type OutboxStore interface {
	Deliveries(ctx context.Context, entryID string) ([]store.Delivery, []store.Attempt, error)
	Redeliver(ctx context.Context, sel store.DeliverySelection, now time.Time) (int, error)
	DisabledEndpoints(ctx context.Context) (map[string]string, error)
	EnableEndpoint(ctx context.Context, endpoint string) error
}

// registerDeliveries adds the routes of webhook and e-mail deliveries
// beyond an entry's (which are in its detail, and redelivered from it).
func (h *Handler) registerDeliveries(mux Mux) {
	mux.Handle("POST /v1/admin/forms/{form}/deliveries/redeliver", h.route(accounts.Act, true, h.withOutbox(h.redeliverWindow)))
	mux.Handle("GET /v1/admin/forms/{form}/endpoints/disabled", h.route(accounts.Read, true, h.withOutbox(h.disabledEndpoints)))
	mux.Handle("POST /v1/admin/forms/{form}/endpoints/{endpoint}/enable", h.route(accounts.Act, true, h.withOutbox(h.enableEndpoint)))
}

// withOutbox answers errNoDeliveries where nothing delivers (a store
// without the outbox's tables).
func (h *Handler) withOutbox(fn func(http.ResponseWriter, *http.Request, call) error) func(http.ResponseWriter, *http.Request, call) error {
	return func(w http.ResponseWriter, r *http.Request, c call) error {
		if h.Outbox == nil {
			return errNoDeliveries
		}
		return fn(w, r, c)
	}
}

// StoreDeliveries are an entry's deliveries read from the outbox's
// tables: the console's Deliveries, and formd deliveries log's.
type StoreDeliveries struct {
	Store OutboxStore
	Forms interface {
		Get(id string) *form.Form
		Site(id string) *form.Site
	}
	Now  func() time.Time
	Wake func()
}

var _ Deliveries = (*StoreDeliveries)(nil)

// ForEntry lists the deliveries of an entry's events with their attempts.
func (s *StoreDeliveries) ForEntry(ctx context.Context, entryID string) ([]DeliveryView, error) {
	ds, as, err := s.Store.Deliveries(ctx, entryID)
	if err != nil {
		return nil, err
	}
	out := make([]DeliveryView, len(ds))
	for i, d := range ds {
		v := DeliveryView{EventSeq: d.EventSeq, EventID: d.Event.ID(), EventType: d.Event.Type, Endpoint: d.Endpoint,
			Target: s.target(d.Event.Form, d.Endpoint), State: d.State}
		if d.State == store.DeliveryPending {
			v.NextAt = d.NextAt
		}
		for _, a := range as {
			if a.DeliveryKey == d.DeliveryKey {
				v.Attempts = append(v.Attempts, AttemptView{At: a.At, Status: a.Status, Latency: a.Latency, Outcome: a.Outcome, Excerpt: a.Excerpt})
			}
		}
		out[i] = v
	}
	return out, nil
}

// Redeliver sends one delivery again, due now.
func (s *StoreDeliveries) Redeliver(ctx context.Context, eventSeq uint64, endpoint string) error {
	n, err := s.Store.Redeliver(ctx, store.DeliverySelection{Key: &store.DeliveryKey{EventSeq: eventSeq, Endpoint: endpoint}}, s.Now())
	if err != nil {
		return err
	}
	if n == 0 {
		return problem.New(problem.CodeEntryNotFound, "no delivery of this event to this endpoint, or it is being sent now")
	}
	if s.Wake != nil {
		s.Wake()
	}
	return nil
}

// target says where a delivery goes, for people: a webhook's scheme, host
// and path (never its query, which may hold a token), or whose mail.
func (s *StoreDeliveries) target(formID, endpoint string) string {
	switch endpoint {
	case "email:owner":
		return "e-mail to the owner"
	case "email:confirm":
		return "e-mail to the person"
	}
	if s.Forms == nil {
		return endpoint
	}
	for _, w := range notifyWebhooks(s.Forms, formID) {
		if w.Endpoint() == endpoint {
			if u, err := url.Parse(w.URL); err == nil {
				return u.Scheme + "://" + u.Host + u.Path
			}
		}
	}
	// A chat robot by its platform and URL, its token hidden (Slack's
	// and Feishu's are in the path).
	for _, n := range notifyBlocks(s.Forms, formID) {
		for _, kind := range form.ChatKinds {
			for _, b := range n.Bots(kind) {
				if form.ChatEndpoint(kind, b.URL) == endpoint {
					return kind + " " + form.MaskChatURL(b.URL)
				}
			}
		}
	}
	return endpoint
}

// notifyBlocks are a form's notify block and its site's, those there are.
func notifyBlocks(forms interface {
	Get(id string) *form.Form
	Site(id string) *form.Site
}, formID string) []*form.Notify {
	f := forms.Get(formID)
	if f == nil {
		return nil
	}
	var out []*form.Notify
	if f.Def.Notify != nil {
		out = append(out, f.Def.Notify)
	}
	if site := forms.Site(f.Def.Site); site != nil && site.Def.Notify != nil {
		out = append(out, site.Def.Notify)
	}
	return out
}

// notifyWebhooks lists a form's webhooks and its site's.
func notifyWebhooks(forms interface {
	Get(id string) *form.Form
	Site(id string) *form.Site
}, formID string) []form.Webhook {
	f := forms.Get(formID)
	if f == nil {
		return nil
	}
	blocks := []*form.Notify{f.Def.Notify}
	if site := forms.Site(f.Def.Site); site != nil {
		blocks = append(blocks, site.Def.Notify)
	}
	var out []form.Webhook
	for _, n := range blocks {
		if n != nil {
			out = append(out, n.Webhooks...)
		}
	}
	return out
}

// notifies says whether a form (or its site) sends webhooks or e-mail.
func notifies(forms interface {
	Get(id string) *form.Form
	Site(id string) *form.Site
}, f *form.Form) bool {
	has := func(n *form.Notify) bool {
		if n == nil {
			return false
		}
		if len(n.Webhooks) > 0 || n.Email != nil {
			return true
		}
		for _, kind := range form.ChatKinds {
			if len(n.Bots(kind)) > 0 {
				return true
			}
		}
		return false
	}
	if has(f.Def.Notify) {
		return true
	}
	site := forms.Site(f.Def.Site)
	return site != nil && has(site.Def.Notify)
}

// redeliverRequest selects a form's deliveries to send again by the time
// of their events, failed ones only (the default) or all.
type redeliverRequest struct {
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	FailedOnly *bool     `json:"failed_only"`
}

// redeliverWindow is POST …/forms/{form}/deliveries/redeliver: bulk
// redelivery of a form's deliveries (one is redelivered from its entry).
func (h *Handler) redeliverWindow(w http.ResponseWriter, r *http.Request, c call) error {
	var req redeliverRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"since": "2027-03-01T00:00:00Z", "until": "…", "failed_only": true}; all fields may be left out`)
	}
	sel := store.DeliverySelection{Form: c.form.ID(), Since: req.Since, Until: req.Until, FailedOnly: req.FailedOnly == nil || *req.FailedOnly}
	n, err := h.Outbox.Redeliver(r.Context(), sel, h.Now())
	if err != nil {
		return err
	}
	detail, _ := json.Marshal(map[string]any{"since": req.Since, "until": req.Until, "failed_only": sel.FailedOnly, "redelivered": n})
	if err := h.audit(r.Context(), c, "deliveries.redeliver", c.form.ID(), string(detail)); err != nil {
		return err
	}
	if h.Wake != nil {
		h.Wake()
	}
	return writeJSON(w, http.StatusOK, map[string]any{"redelivered": n})
}

// disabledEndpoints is GET …/forms/{form}/endpoints/disabled: the form's
// endpoints that answered 410 Gone, with why.
func (h *Handler) disabledEndpoints(w http.ResponseWriter, r *http.Request, c call) error {
	off, err := h.Outbox.DisabledEndpoints(r.Context())
	if err != nil {
		return err
	}
	out := map[string]string{}
	for _, wh := range notifyWebhooks(h.Forms, c.form.ID()) {
		if reason, ok := off[wh.Endpoint()]; ok {
			out[wh.Endpoint()] = reason
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"disabled": out})
}

// enableEndpoint is POST …/forms/{form}/endpoints/{endpoint}/enable: an
// endpoint switched off by a 410 takes deliveries again (new ones; the
// skipped ones are redelivered on request).
func (h *Handler) enableEndpoint(w http.ResponseWriter, r *http.Request, c call) error {
	ep := r.PathValue("endpoint")
	found := false
	for _, wh := range notifyWebhooks(h.Forms, c.form.ID()) {
		found = found || wh.Endpoint() == ep
	}
	if !found {
		return problem.New(problem.CodeNotFound, "this form has no such endpoint")
	}
	if err := h.Outbox.EnableEndpoint(r.Context(), ep); err != nil {
		return err
	}
	if err := h.audit(r.Context(), c, "endpoint.enable", ep, ""); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"enabled": ep})
}
