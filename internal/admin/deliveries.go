package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Deliveries is the part of the store the deliveries API uses.
type Deliveries interface {
	Deliveries(ctx context.Context, entryID string) ([]store.Delivery, []store.Attempt, error)
	Redeliver(ctx context.Context, sel store.DeliverySelection, now time.Time) (int, error)
	DisabledEndpoints(ctx context.Context) (map[string]string, error)
	EnableEndpoint(ctx context.Context, endpoint string) error
}

// registerDeliveries adds the routes of webhook and e-mail deliveries.
func (h *Handler) registerDeliveries(mux *http.ServeMux) {
	mux.Handle("GET /v1/admin/forms/{form}/entries/{id}/deliveries", h.route(accounts.Read, true, h.entryDeliveries))
	mux.Handle("POST /v1/admin/forms/{form}/deliveries/redeliver", h.route(accounts.Act, true, h.redeliver))
	mux.Handle("GET /v1/admin/forms/{form}/endpoints/disabled", h.route(accounts.Read, true, h.disabledEndpoints))
	mux.Handle("POST /v1/admin/forms/{form}/endpoints/{endpoint}/enable", h.route(accounts.Act, true, h.enableEndpoint))
}

// DeliveryJSON is one delivery of an entry's event with its attempts: the
// delivery log.
type DeliveryJSON struct {
	EventID   string        `json:"event_id"`
	EventSeq  uint64        `json:"event_seq"`
	Type      string        `json:"type"`
	Endpoint  string        `json:"endpoint"`
	State     string        `json:"state"`
	Attempts  []AttemptJSON `json:"attempts"`
	NextAt    *time.Time    `json:"next_at,omitempty"`
	LastError string        `json:"last_error,omitempty"`
}

// AttemptJSON is one attempt of a delivery.
type AttemptJSON struct {
	At        time.Time `json:"at"`
	Status    int       `json:"status"`
	LatencyMS float64   `json:"latency_ms"`
	Outcome   string    `json:"outcome"`
	Excerpt   string    `json:"excerpt,omitempty"`
}

// DeliveryLog reads the delivery log of an entry, for the API and the
// console alike.
func DeliveryLog(ctx context.Context, st Deliveries, entryID string) ([]DeliveryJSON, error) {
	ds, as, err := st.Deliveries(ctx, entryID)
	if err != nil {
		return nil, err
	}
	out := make([]DeliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = DeliveryJSON{EventID: d.Event.ID(), EventSeq: d.EventSeq, Type: d.Event.Type, Endpoint: d.Endpoint, State: d.State,
			Attempts: []AttemptJSON{}, LastError: d.LastError}
		if d.State == store.DeliveryPending {
			next := d.NextAt.UTC()
			out[i].NextAt = &next
		}
		for _, a := range as {
			if a.DeliveryKey == d.DeliveryKey {
				out[i].Attempts = append(out[i].Attempts, AttemptJSON{At: a.At.UTC(), Status: a.Status,
					LatencyMS: float64(a.Latency.Microseconds()) / 1000, Outcome: a.Outcome, Excerpt: a.Excerpt})
			}
		}
	}
	return out, nil
}

// entryDeliveries is GET …/entries/{id}/deliveries: the delivery log of
// the entry's events.
func (h *Handler) entryDeliveries(w http.ResponseWriter, r *http.Request, _ call) error {
	log, err := DeliveryLog(r.Context(), h.Deliveries, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"deliveries": log})
}

// redeliverRequest selects deliveries to send again: one (event_seq and
// endpoint), or the form's in a window of event times, failed only or all.
type redeliverRequest struct {
	EventSeq   uint64    `json:"event_seq"`
	Endpoint   string    `json:"endpoint"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	FailedOnly *bool     `json:"failed_only"`
}

// redeliver is POST …/forms/{form}/deliveries/redeliver.
func (h *Handler) redeliver(w http.ResponseWriter, r *http.Request, c call) error {
	var req redeliverRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"event_seq": 12, "endpoint": "webhook:…"} for one delivery, or {"since": "2027-03-01T00:00:00Z", "until": "…", "failed_only": true}`)
	}
	sel := store.DeliverySelection{Form: c.form.ID(), Since: req.Since, Until: req.Until, FailedOnly: req.FailedOnly == nil || *req.FailedOnly}
	if req.EventSeq != 0 || req.Endpoint != "" {
		if req.EventSeq == 0 || req.Endpoint == "" {
			return problem.New(problem.CodeInvalidRequest, "one delivery needs both event_seq and endpoint")
		}
		sel.Key = &store.DeliveryKey{EventSeq: req.EventSeq, Endpoint: req.Endpoint}
		sel.FailedOnly = false
	}
	n, err := h.Deliveries.Redeliver(r.Context(), sel, h.Now())
	if err != nil {
		return err
	}
	if err := h.audit(r.Context(), c, "deliveries.redeliver", req.Endpoint, redeliverDetail(sel, n)); err != nil {
		return err
	}
	if h.Wake != nil {
		h.Wake()
	}
	return writeJSON(w, http.StatusOK, map[string]any{"redelivered": n})
}

func redeliverDetail(sel store.DeliverySelection, n int) string {
	b, _ := json.Marshal(map[string]any{"selected": sel, "redelivered": n})
	return string(b)
}

// disabledEndpoints is GET …/forms/{form}/endpoints/disabled: the form's
// endpoints that answered 410 Gone, with why.
func (h *Handler) disabledEndpoints(w http.ResponseWriter, r *http.Request, c call) error {
	off, err := h.Deliveries.DisabledEndpoints(r.Context())
	if err != nil {
		return err
	}
	out := map[string]string{}
	for _, ep := range h.formEndpoints(c) {
		if reason, ok := off[ep]; ok {
			out[ep] = reason
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
	for _, e := range h.formEndpoints(c) {
		found = found || e == ep
	}
	if !found {
		return problem.New(problem.CodeNotFound, "this form has no such endpoint")
	}
	if err := h.Deliveries.EnableEndpoint(r.Context(), ep); err != nil {
		return err
	}
	if err := h.audit(r.Context(), c, "endpoint.enable", ep, ""); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"enabled": ep})
}

// formEndpoints lists the webhook endpoint ids of the call's form and of
// its site.
func (h *Handler) formEndpoints(c call) []string {
	blocks := []*form.Notify{c.form.Def.Notify}
	if site := h.Forms.Site(c.form.Def.Site); site != nil {
		blocks = append(blocks, site.Def.Notify)
	}
	var out []string
	for _, n := range blocks {
		if n == nil {
			continue
		}
		for _, w := range n.Webhooks {
			out = append(out, w.Endpoint())
		}
	}
	return out
}
