package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/ticket"
	"github.com/prometheus/client_golang/prometheus"
)

// Check-in at the door (DESIGN §4 "Check-in"): a ticket scanned or a
// short code typed is one scan, sent with its own idempotency key; the
// store decides the entry's first check-in once and keeps every scan's
// answer.

func (h *Handler) registerCheckins(mux Mux) {
	mux.Handle("POST /v1/admin/forms/{form}/checkins", h.route(accounts.CheckIn, true, h.checkInOne))
	mux.Handle("GET /v1/admin/forms/{form}/checkins", h.route(accounts.CheckIn, true, h.roster))
	mux.Handle("DELETE /v1/admin/forms/{form}/checkins/{id}", h.route(accounts.Act, true, h.undoCheckIn))
}

// NewTicketsRefused is the counter of tickets refused as not this form's
// (forged, altered, an unknown code, another form's), by reason: a
// rising count is someone trying tickets at a door.
func NewTicketsRefused(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "formd_tickets_refused_total",
		Help: "Tickets refused at the door as not the form's: forged or altered, an unknown short code, another form's."}, []string{"reason"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

// Reasons a ticket is refused (problem member reason).
const (
	ReasonForged      = "forged"
	ReasonUnknownCode = "unknown-code"
	ReasonAnotherForm = "another-form"
)

// ScanRequest is the body of POST …/checkins: a scanned ticket or a typed
// short code, the door's name and when it was scanned (the door's clock;
// now when absent).
type ScanRequest struct {
	Ticket    string    `json:"ticket"`
	Door      string    `json:"door"`
	ScannedAt time.Time `json:"scanned_at"`
}

// ScanAnswer is a check-in's answer (201 checked_in, 200
// already_checked_in): whom it let in, and the first check-in's time and
// door.
type ScanAnswer struct {
	Result      string    `json:"result"`
	Entry       string    `json:"entry"`
	Code        string    `json:"code"`
	Name        string    `json:"name,omitempty"`
	Option      string    `json:"option,omitempty"`
	CheckedInAt time.Time `json:"checked_in_at"`
	Door        string    `json:"door"`
}

// maxDoor is the longest door name, in bytes.
const maxDoor = 100

func (h *Handler) checkInOne(w http.ResponseWriter, r *http.Request, c call) error {
	key, err := intake.ParseKey(r.Header.Get("Idempotency-Key"))
	if r.Header.Get("Idempotency-Key") == "" {
		return problem.New(problem.CodeKeyMissing, "each scan carries its own Idempotency-Key, the same on every retry")
	}
	if err != nil {
		return problem.New(problem.CodeInvalidRequest, "the Idempotency-Key must be 1 to 255 visible ASCII characters")
	}
	var req ScanRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<10))
	if err != nil || json.Unmarshal(body, &req) != nil {
		return problem.New(problem.CodeInvalidRequest, `the body must be {"ticket": "…", "door": "…", "scanned_at": "RFC 3339"}`)
	}
	a, status, err := h.CheckIn(r.Context(), c.p, c.form, key, req)
	if err != nil {
		return err
	}
	return writeJSON(w, status, a)
}

// CheckIn decides one scan: the ticket (or short code) is resolved to an
// entry of the form, then the store decides (store.Checkins). It answers
// 201 for the first check-in, 200 for a later scan; ticket-invalid for
// what is not the form's ticket (counted, naming no one),
// ticket-not-valid-now for an entry that may not come in.
func (h *Handler) CheckIn(ctx context.Context, p accounts.Principal, f *form.Form, key string, req ScanRequest) (ScanAnswer, int, error) {
	if !f.Def.Checkin {
		return ScanAnswer{}, 0, problem.New(problem.CodeInvalidRequest, "this form has no check-in (checkin: true in its definition)")
	}
	door := strings.TrimSpace(req.Door)
	if door == "" || len(door) > maxDoor {
		return ScanAnswer{}, 0, problem.New(problem.CodeInvalidRequest, "door must name the door, in 1 to 100 bytes")
	}
	if req.ScannedAt.IsZero() {
		req.ScannedAt = h.Now()
	}
	id, err := h.resolveTicket(ctx, f, req.Ticket)
	if err != nil {
		return ScanAnswer{}, 0, err
	}
	res, err := h.Store.CheckIn(ctx, store.Scan{Form: f.ID(), EntryID: id, Key: key, Door: door, ScannedAt: req.ScannedAt.UTC()})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ScanAnswer{}, 0, h.refuseTicket(ReasonForged)
	case err != nil:
		return ScanAnswer{}, 0, err
	case res.Result == store.NotValidNow:
		pr := problem.New(problem.CodeTicketNotValidNow, "this entry is "+res.Status)
		pr.EntryStatus = res.Status
		return ScanAnswer{}, 0, pr
	}
	a := ScanAnswer{Result: res.Result, Entry: id, Code: ticket.Code(h.Hasher, f.ID(), id), CheckedInAt: res.At, Door: res.Door}
	if d, err := h.Store.Entry(ctx, f.ID(), id); err == nil {
		a.Name, a.Option = Attendee(f, d.Data)
	}
	status := http.StatusOK
	if res.Result == store.CheckedIn {
		status = http.StatusCreated
	}
	return a, status, nil
}

// resolveTicket finds the entry a scanned ticket or a typed code names on
// the form; anything else is ticket-invalid, counted.
func (h *Handler) resolveTicket(ctx context.Context, f *form.Form, t string) (string, error) {
	if ticket.IsTicket(t) {
		formID, id, ok := ticket.Parse(h.Hasher, t)
		switch {
		case !ok:
			return "", h.refuseTicket(ReasonForged)
		case formID != f.ID():
			return "", h.refuseTicket(ReasonAnotherForm)
		}
		return id, nil
	}
	if ticket.NormalizeCode(t) == "" {
		return "", h.refuseTicket(ReasonForged)
	}
	roster, err := h.Store.Roster(ctx, f.ID())
	if err != nil {
		return "", err
	}
	ids := make([]string, len(roster))
	for i, e := range roster {
		ids[i] = e.ID
	}
	id, ok := ticket.Match(h.Hasher, f.ID(), t, ids)
	if !ok {
		return "", h.refuseTicket(ReasonUnknownCode)
	}
	return id, nil
}

func (h *Handler) refuseTicket(reason string) error {
	if h.TicketsRefused != nil {
		h.TicketsRefused.WithLabelValues(reason).Inc()
	}
	p := problem.New(problem.CodeTicketInvalid, "")
	p.Reason = reason
	return p
}

// Attendee is what the door shows of an entry: its name (the field
// called name, else the first text field) and its option (the form's
// field with places, else its first select), never more.
func Attendee(f *form.Form, data json.RawMessage) (name, option string) {
	var values map[string]any
	_ = json.Unmarshal(data, &values)
	str := func(k string) string { s, _ := values[k].(string); return s }
	if _, ok := f.Field("name"); ok {
		name = str("name")
	}
	placeField, _ := f.PlaceField()
	for _, fd := range f.Fields() {
		if name == "" && fd.Type == "text" {
			name = str(fd.Name)
		}
		if placeField == "" && fd.Type == "select" {
			placeField = fd.Name
		}
	}
	if placeField != "" {
		option = str(placeField)
	}
	return name, option
}

// RosterEntry is one valid ticket as the door keeps it offline.
type RosterEntry struct {
	Ticket      string     `json:"ticket"`
	Code        string     `json:"code"`
	Name        string     `json:"name,omitempty"`
	Option      string     `json:"option,omitempty"`
	CheckedInAt *time.Time `json:"checked_in_at,omitempty"`
	Door        string     `json:"door,omitempty"`
}

// Count is checked in out of expected (the stored entries).
type Count struct {
	Expected  int `json:"expected"`
	CheckedIn int `json:"checked_in"`
}

// Roster is GET …/checkins: the form's valid tickets (stored entries)
// with their check-ins, and the counts per form and per option.
type Roster struct {
	Count
	Options map[string]Count `json:"options,omitempty"`
	Tickets []RosterEntry    `json:"tickets"`
}

// RosterOf reads the form's roster and counts.
func (h *Handler) RosterOf(ctx context.Context, f *form.Form) (Roster, error) {
	rows, err := h.Store.Roster(ctx, f.ID())
	if err != nil {
		return Roster{}, err
	}
	out := Roster{Tickets: []RosterEntry{}}
	for _, e := range rows {
		if !ticket.Valid(e.Status) {
			continue
		}
		re := RosterEntry{Ticket: ticket.Ticket(h.Hasher, f.ID(), e.ID), Code: ticket.Code(h.Hasher, f.ID(), e.ID), Door: e.Door}
		re.Name, re.Option = Attendee(f, e.Data)
		out.Expected++
		if !e.CheckedInAt.IsZero() {
			at := e.CheckedInAt
			re.CheckedInAt = &at
			out.CheckedIn++
		}
		if re.Option != "" {
			if out.Options == nil {
				out.Options = map[string]Count{}
			}
			oc := out.Options[re.Option]
			oc.Expected++
			if re.CheckedInAt != nil {
				oc.CheckedIn++
			}
			out.Options[re.Option] = oc
		}
		out.Tickets = append(out.Tickets, re)
	}
	return out, nil
}

func (h *Handler) roster(w http.ResponseWriter, r *http.Request, c call) error {
	if !c.form.Def.Checkin {
		return problem.New(problem.CodeInvalidRequest, "this form has no check-in (checkin: true in its definition)")
	}
	ro, err := h.RosterOf(r.Context(), c.form)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ro)
}

// UndoCheckIn deletes an entry's check-in (a scan let the wrong person
// in, or too early), recorded in the audit log.
func (h *Handler) UndoCheckIn(ctx context.Context, p accounts.Principal, f *form.Form, id string) (bool, error) {
	undone, err := h.Store.UndoCheckIn(ctx, f.ID(), id)
	if err != nil || !undone {
		return undone, err
	}
	return true, h.audit(ctx, call{p: p, form: f}, "checkin.undo", id, "")
}

func (h *Handler) undoCheckIn(w http.ResponseWriter, r *http.Request, c call) error {
	id := r.PathValue("id")
	undone, err := h.UndoCheckIn(r.Context(), c.p, c.form, id)
	if err != nil {
		return err
	}
	if !undone {
		return problem.New(problem.CodeEntryNotFound, fmt.Sprintf("entry %s has no check-in", id))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"undone": id})
}
