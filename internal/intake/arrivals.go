package intake

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Arrivals keeps what devices report about their submissions (the
// store's RecordArrivals).
type Arrivals interface {
	RecordArrivals(ctx context.Context, form string, b store.ArrivalBatch, now time.Time) (int, error)
}

// Limits on one beacon request: a device sends a few at a time.
const (
	maxArrivalEvents = 100
	maxArrivalBody   = 64 << 10
)

// Budgets of arrival reports, in events, per instance: per (address,
// form) a burst of 1,000 (a crowd of 500 behind one carrier's NAT, two
// reports each) refilled at 2 a second, and per form a burst of 20,000
// refilled at 200 a second (12,000 a minute: a registration opening to
// thousands). Reports are telemetry: over a budget they are refused
// (429) and counted, and nothing a person sees changes.
const (
	arrivalsPerAddressBurst  = 1000
	arrivalsPerAddressSecond = 2
	arrivalsPerFormBurst     = 20000
	arrivalsPerFormSecond    = 200
)

// Keys the store may learn of from arrival reports alone (a "started"
// report with an Origin, from the form's pages or the hosted page, on a
// key no entry has): per form a burst of 2,000 refilled at 20 a second
// on an instance. An Origin is a browser's word, which a script can give
// (issue 30: 22 addresses sending this server's own Origin recorded
// 22,300 made-up keys). Past the budget, reports still count for the
// keys that reached the store (as those without an Origin do), and the
// keys they would add are dropped and counted as refused.
const (
	arrivalNewKeysBurst  = 2000
	arrivalNewKeysSecond = 20
)

// sdkKey is the shape of the SDK's keys (newKey in sdk/js/formd.js: a
// random UUID, version 4) and of the hosted page's (version 7), in lower
// case. A report on another key was not made by the SDK.
var sdkKey = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[47][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

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
//
// Anyone can post here, so what a report may change is bounded:
//   - from a browser (an Origin), only the form's origins or this server
//     (the hosted page) are taken;
//   - without an Origin (a mini-program, or a script) nothing shows where
//     a report came from, so it counts only for keys the store has an
//     entry for: it can confirm an arrival, never add a key started and
//     never received, and a forged key costs nothing and counts nothing;
//   - keys must look like the SDK's;
//   - events are budgeted per address and form, and per form;
//   - every refusal is counted for the proof page, and reports are pruned
//     after store.ArrivalsKept.
func (h *Handler) arrivals(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if h.cfg.Arrivals == nil {
		return problem.New(problem.CodeNotFound, "this server keeps no arrival reports")
	}
	now := h.cfg.Now()
	// Beacons share the client's rate limit with its submissions, at four
	// times the rate: two reports a submission, and retries.
	if _, err := h.rateLimitScaled(r, f, now, "|arrivals", 4); err != nil {
		h.refuse(r.Context(), f, 1, now)
		return err
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		h.refuse(r.Context(), f, 1, now)
		return err
	}
	var body struct {
		Events []arrivalEvent `json:"events"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxArrivalBody))
	if err := dec.Decode(&body); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"events":[{"key":"…","type":"started","at":1764500000000}]}`)
	}
	n := len(body.Events)
	if n == 0 || n > maxArrivalEvents {
		return problem.New(problem.CodeInvalidRequest, "send 1 to 100 events")
	}
	if err := h.arrivalBudget(r, f, now, n); err != nil {
		h.refuse(r.Context(), f, n, now)
		return err
	}
	reports := make([]store.Arrival, 0, n)
	lo, hi := now.Add(-30*24*time.Hour), now.Add(24*time.Hour)
	for _, e := range body.Events {
		at := time.UnixMilli(e.At)
		if !sdkKey.MatchString(e.Key) {
			h.refuse(r.Context(), f, n, now)
			return problem.New(problem.CodeInvalidRequest, "each event's key is the SDK's key of the submission (a random UUID)")
		}
		if at.Before(lo) || at.After(hi) {
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
	knownOnly := r.Header.Get("Origin") == ""
	if !knownOnly {
		started := 0
		for _, a := range reports {
			if !a.StartedAt.IsZero() {
				started++
			}
		}
		if ok, _ := h.limiter.allowN("|form-arrival-new-keys|"+f.ID(), now, arrivalNewKeysSecond, arrivalNewKeysBurst, started); !ok {
			knownOnly = true
		}
	}
	b := store.ArrivalBatch{Reports: reports, KnownOnly: knownOnly, Refused: h.arrivalRefusals.take(f.ID())}
	if _, err := h.cfg.Arrivals.RecordArrivals(r.Context(), f.ID(), b, now); err != nil {
		h.arrivalRefusals.add(f.ID(), b.Refused, time.Time{})
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// arrivalBudget takes n events from the address's and the form's budgets.
func (h *Handler) arrivalBudget(r *http.Request, f *form.Form, now time.Time, n int) error {
	key := h.clientKey(r) + "|" + f.ID() + "|arrival-events"
	ok, wait := h.limiter.allowN(key, now, arrivalsPerAddressSecond, arrivalsPerAddressBurst, n)
	if ok {
		if ok, wait = h.limiter.allowN("|form-arrival-events|"+f.ID(), now, arrivalsPerFormSecond, arrivalsPerFormBurst, n); !ok {
			h.limiter.refundN(key, arrivalsPerAddressBurst, n)
		}
	}
	if ok {
		return nil
	}
	p := problem.New(problem.CodeRateLimited, "too many arrival reports for this form")
	p.RetryAfter = max(1, int((wait+time.Second-1)/time.Second))
	return p
}

// refuse counts n reports refused before the store. The counts of a form
// are written with its next report, or on their own at most every
// refusalFlush, so that a flood of refusals costs no write each.
func (h *Handler) refuse(ctx context.Context, f *form.Form, n int, now time.Time) {
	if h.cfg.Arrivals == nil || !h.arrivalRefusals.add(f.ID(), n, now) {
		return
	}
	if m := h.arrivalRefusals.take(f.ID()); m > 0 {
		if _, err := h.cfg.Arrivals.RecordArrivals(ctx, f.ID(), store.ArrivalBatch{Refused: m}, now); err != nil {
			h.arrivalRefusals.add(f.ID(), m, time.Time{})
			h.cfg.Logger.Warn("arrivals: refused reports not counted yet", "form", f.ID(), "err", err)
		}
	}
}

// refusalFlush is how often a form's refusals are written on their own.
const refusalFlush = 10 * time.Second

// refusalTally holds refused reports per form until they are written.
type refusalTally struct {
	mu      sync.Mutex
	pending map[string]int
	written map[string]time.Time
}

func newRefusalTally() *refusalTally {
	return &refusalTally{pending: map[string]int{}, written: map[string]time.Time{}}
}

// add counts n refusals of form and says whether they are due to be
// written (the last write was refusalFlush ago); a zero now never is.
func (t *refusalTally) add(form string, n int, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[form] += n
	if now.IsZero() || now.Sub(t.written[form]) < refusalFlush {
		return false
	}
	t.written[form] = now
	return true
}

// take hands over form's pending refusals.
func (t *refusalTally) take(form string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.pending[form]
	delete(t.pending, form)
	return n
}
