package intake

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Arrivals keeps what devices report about their submissions (the
// store's RecordArrivals).
type Arrivals interface {
	RecordArrivals(ctx context.Context, form string, reports []store.Arrival, now time.Time) error
}

// Limits on one beacon request: a device sends a few at a time.
const (
	maxArrivalEvents = 100
	maxArrivalBody   = 64 << 10
)

// arrivalStates are the SDK's final states an "answered" report may name.
var arrivalStates = []string{"received", "waitlisted", "duplicate", "invalid", "closed", "full", "failed"}

// arrivalEvent is one report of the SDK's beacon.
type arrivalEvent struct {
	Key   string `json:"key"`
	Type  string `json:"type"`  // started | answered
	At    int64  `json:"at"`    // device clock, ms since the epoch
	State string `json:"state"` // for answered: the final state shown
}

// arrivals is POST /v1/forms/{form}/arrivals: the SDK's reports that a
// person pressed send (started) and that a definitive answer came
// (answered), so the console can show keys started on devices and never
// received. Reports are never personal data, never block a submission,
// and a bad one is refused whole (400) so a broken client is noticed.
func (h *Handler) arrivals(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	if h.cfg.Arrivals == nil {
		return problem.New(problem.CodeNotFound, "this server keeps no arrival reports")
	}
	now := h.cfg.Now()
	// Beacons share the client's rate limit with its submissions, at four
	// times the rate: two reports a submission, and retries.
	if _, err := h.rateLimitScaled(r, f, now, "|arrivals", 4); err != nil {
		return err
	}
	var body struct {
		Events []arrivalEvent `json:"events"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxArrivalBody))
	if err := dec.Decode(&body); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"events":[{"key":"…","type":"started","at":1764500000000}]}`)
	}
	if len(body.Events) == 0 || len(body.Events) > maxArrivalEvents {
		return problem.New(problem.CodeInvalidRequest, "send 1 to 100 events")
	}
	reports := make([]store.Arrival, 0, len(body.Events))
	lo, hi := now.Add(-30*24*time.Hour), now.Add(24*time.Hour)
	for _, e := range body.Events {
		at := time.UnixMilli(e.At)
		if !validKey(e.Key) || at.Before(lo) || at.After(hi) {
			return problem.New(problem.CodeInvalidRequest, "each event needs a key and a time (ms since the epoch) within the last 30 days")
		}
		a := store.Arrival{Key: e.Key}
		switch e.Type {
		case "started":
			a.StartedAt = at
		case "answered":
			if !slices.Contains(arrivalStates, e.State) {
				return problem.New(problem.CodeInvalidRequest, "an answered event needs the state shown: one of received, waitlisted, duplicate, invalid, closed, full, failed")
			}
			a.AnsweredAt, a.State = at, e.State
		default:
			return problem.New(problem.CodeInvalidRequest, "type must be started or answered")
		}
		reports = append(reports, a)
	}
	if err := h.cfg.Arrivals.RecordArrivals(r.Context(), f.ID(), reports, now); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
	return nil
}
