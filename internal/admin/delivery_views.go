package admin

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// Deliveries is what the console reads and does about an entry's
// deliveries (webhooks and e-mail, the outbox's deliveries and
// delivery_attempts tables). The dispatcher's package implements it; nil
// while nothing is configured to deliver.
type Deliveries interface {
	// ForEntry lists the deliveries of an entry's events, oldest event
	// first, each with its attempts oldest first.
	ForEntry(ctx context.Context, entryID string) ([]DeliveryView, error)
	// Redeliver sends an event to an endpoint again, as a new delivery
	// with its own attempts (the event keeps its id, so receivers dedupe).
	Redeliver(ctx context.Context, eventSeq uint64, endpoint string) error
}

// DeliveryView is one event's delivery to one endpoint.
type DeliveryView struct {
	EventSeq  uint64
	EventID   string // store.Event.ID(), the webhook-id
	EventType string // submission.stored, …
	// Endpoint is the deliveries row's endpoint (webhook:<hash>,
	// email:owner, email:confirm); Target is what a person reads (the
	// webhook URL without its secret parts, or the recipient's kind).
	Endpoint string
	Target   string
	State    string // pending | delivered | failed | skipped
	NextAt   time.Time
	Attempts []AttemptView
}

// AttemptView is one attempt of a delivery.
type AttemptView struct {
	At      time.Time
	Status  int // HTTP status or SMTP reply code; 0 without an answer
	Latency time.Duration
	Outcome attempt.Outcome
	Excerpt string
}

// Redeliver sends an event of an entry of f to an endpoint again; the
// event must be the entry's.
func (h *Handler) Redeliver(ctx context.Context, p accounts.Principal, f *form.Form, entryID string, eventSeq uint64, endpoint string) error {
	if h.Deliveries == nil {
		return errNoDeliveries
	}
	hist, err := h.Store.History(ctx, entryID)
	if err != nil {
		return err
	}
	found := false
	for _, e := range hist {
		found = found || e.Seq == eventSeq && e.Form == f.ID()
	}
	if !found {
		return problem.New(problem.CodeEntryNotFound, "this entry has no such event")
	}
	if err := h.Deliveries.Redeliver(ctx, eventSeq, endpoint); err != nil {
		return err
	}
	return h.audit(ctx, call{p: p, form: f}, "event.redeliver", entryID, "event="+strconv.FormatUint(eventSeq, 10)+" endpoint="+endpoint)
}

type attemptJSON struct {
	At        time.Time `json:"at"`
	Status    int       `json:"status"`
	LatencyMS float64   `json:"latency_ms"`
	Outcome   string    `json:"outcome"`
	Excerpt   string    `json:"excerpt"`
}

type deliveryJSON struct {
	EventSeq  uint64        `json:"event_seq"`
	EventID   string        `json:"event_id"`
	EventType string        `json:"event_type"`
	Endpoint  string        `json:"endpoint"`
	Target    string        `json:"target"`
	State     string        `json:"state"`
	NextAt    *time.Time    `json:"next_at,omitempty"`
	Attempts  []attemptJSON `json:"attempts"`
}

// deliveriesJSON is null while nothing delivers, else the list.
func deliveriesJSON(v EntryView) any {
	if !v.DeliveriesConfigured {
		return nil
	}
	out := []deliveryJSON{}
	for _, d := range v.Deliveries {
		dj := deliveryJSON{EventSeq: d.EventSeq, EventID: d.EventID, EventType: d.EventType, Endpoint: d.Endpoint, Target: d.Target, State: d.State, Attempts: []attemptJSON{}}
		if !d.NextAt.IsZero() {
			t := d.NextAt.UTC()
			dj.NextAt = &t
		}
		for _, a := range d.Attempts {
			dj.Attempts = append(dj.Attempts, attemptJSON{At: a.At.UTC(), Status: a.Status, LatencyMS: float64(a.Latency) / float64(time.Millisecond), Outcome: string(a.Outcome), Excerpt: a.Excerpt})
		}
		out = append(out, dj)
	}
	return out
}

// redeliver is POST …/entries/{id}/redeliver {"event_seq", "endpoint"}.
func (h *Handler) redeliver(w http.ResponseWriter, r *http.Request, c call) error {
	var req struct {
		EventSeq uint64 `json:"event_seq"`
		Endpoint string `json:"endpoint"`
	}
	if err := decodeJSON(w, r, &req); err != nil || req.EventSeq == 0 || req.Endpoint == "" {
		return problem.New(problem.CodeInvalidRequest, `send {"event_seq": 12, "endpoint": "webhook:…"}`)
	}
	if err := h.Redeliver(r.Context(), c.p, c.form, r.PathValue("id"), req.EventSeq, req.Endpoint); err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"redelivering": req.EventSeq, "endpoint": req.Endpoint})
}
