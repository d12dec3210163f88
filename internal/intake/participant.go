package intake

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ParticipantStore is what the participant's link reads and writes
// (store.Store's Entry, Cancel, store.Participants, store.Changes and
// store.ErasureRequests).
type ParticipantStore interface {
	Entry(ctx context.Context, form, id string) (store.EntryDetail, error)
	WaitlistPosition(ctx context.Context, form, id string) (int, error)
	Cancel(ctx context.Context, form, id string) (promoted []string, err error)
	Change(ctx context.Context, c store.Change) (store.Changed, error)
	EntryVersion(ctx context.Context, form, id string) (int, error)
	RequestErasure(ctx context.Context, form, id string, at time.Time) (store.ErasureRequest, bool, error)
	ErasureRequest(ctx context.Context, form, id string) (store.ErasureRequest, bool, error)
}

func (h *Handler) registerParticipant(mux *http.ServeMux) {
	mux.Handle("GET /v1/entries/{token}", h.wrap("entry", h.participantEntry))
	mux.Handle("POST /v1/entries/{token}/cancel", h.wrap("entry-cancel", h.participantCancel))
	mux.Handle("PATCH /v1/entries/{token}", h.wrap("entry-change", h.participantChange))
	mux.Handle("POST /v1/entries/{token}/erasure", h.wrap("entry-erasure", h.participantErasure))
	// The SDK on the organizer's site changes answers cross-origin.
	mux.Handle("OPTIONS /v1/entries/{token}", h.wrap("preflight", h.entryPreflight))
	mux.Handle("OPTIONS /v1/entries/{token}/cancel", h.wrap("preflight", h.entryPreflight))
	mux.Handle("OPTIONS /v1/entries/{token}/erasure", h.wrap("preflight", h.entryPreflight))
}

// withManage adds the participant's link (member manage) to the status
// document of an entry its decision made: stored, waitlisted, pending,
// and spam (answered like a success, so its answer has the same members).
// The link is derived from the entry (package entrylink), so every retry
// and replay of the key carries the same one. A resend of another entry's
// content (SameAs) gets none: whoever knows a person's answers must not
// get that person's link; nor does an entry decided before links were
// (Outcome.Linked), whose retries keep their first body.
func (h *Handler) withManage(doc []byte, o store.Outcome) []byte {
	link := ""
	if h.cfg.Participants != nil {
		link = ManageLink(h.cfg.Hasher, o)
	}
	if link == "" || len(doc) == 0 || doc[len(doc)-1] != '}' {
		return doc
	}
	b := append([]byte{}, doc[:len(doc)-1]...)
	b = append(b, `,"manage":`...)
	b = strconv.AppendQuote(b, link)
	return append(b, '}')
}

// ManageLink is the participant's link (a path, /e/{token}) an outcome's
// answer carries, "" for one that carries none (see withManage): the
// first answer and the hosted result page give the same link under the
// same rule.
func ManageLink(hasher *form.Hasher, o store.Outcome) string {
	if hasher == nil || !o.Linked || o.SameAs != nil {
		return ""
	}
	switch o.Decision {
	case store.StatusStored, store.StatusWaitlisted, store.StatusPending, store.StatusSpam:
		return entrylink.PagePath(entrylink.Token(hasher, o.Form, o.ID))
	}
	return ""
}

// linkToken is the link token of entry id for a plain post's redirect
// (redirectHTML), "" where links are not served.
func (h *Handler) linkToken(formID, id string) string {
	if h.cfg.Participants == nil || h.cfg.Hasher == nil || id == "" {
		return ""
	}
	return entrylink.Token(h.cfg.Hasher, formID, id)
}

// EntryView is what the participant's link shows of an entry: never
// another person's, never the entry's key.
type EntryView struct {
	ID         string    `json:"id"`
	Form       string    `json:"form"`
	Status     string    `json:"status"`
	ReceivedAt time.Time `json:"received_at"`
	Receipt    string    `json:"receipt"`
	// Position is the place in the waitlist, from 1 (the option's
	// waitlist, where the entry waits for an option's place); absent
	// unless waitlisted.
	Position int             `json:"position,omitempty"`
	Data     json.RawMessage `json:"data"`
	// Version is the entry's version (its ETag), which a change names in
	// If-Match.
	Version int `json:"version"`
	// EditUntil is when changes close; absent when the form allows none.
	EditUntil *time.Time `json:"edit_until,omitempty"`
	// Erasure is the participant's erasure request, while it waits for
	// the organizer.
	Erasure *Erasure `json:"erasure,omitempty"`
	// Ticket and TicketCode are the entry's ticket for the door and its
	// short code (withTicket); absent unless it may come in.
	Ticket     string `json:"ticket,omitempty"`
	TicketCode string `json:"ticket_code,omitempty"`
}

// ViewEntry reads what a link token opens. A token this installation did
// not give out, an entry that is not there and an entry whose data was
// erased (forget, retention: the link's revocation) are one error,
// linkNotFound, so that a revoked link tells nothing more than a
// made-up one.
func ViewEntry(ctx context.Context, ps ParticipantStore, hasher *form.Hasher, token string) (EntryView, error) {
	formID, id, ok := entrylink.Parse(hasher, token)
	if !ok {
		return EntryView{}, linkNotFound()
	}
	d, err := ps.Entry(ctx, formID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return EntryView{}, linkNotFound()
	case err != nil:
		return EntryView{}, fmt.Errorf("read the entry of a link: %w", err)
	case d.Data == nil:
		return EntryView{}, linkNotFound()
	}
	v := EntryView{ID: d.ID, Form: d.Form, Status: publicDecision(d.Status), ReceivedAt: d.ReceivedAt.UTC(),
		Receipt: hex.EncodeToString(d.Receipt[:]), Data: d.Data}
	if d.Status == store.StatusWaitlisted {
		if v.Position, err = ps.WaitlistPosition(ctx, formID, id); err != nil {
			return EntryView{}, fmt.Errorf("read the waitlist position of a link's entry: %w", err)
		}
	}
	if v.Version, err = ps.EntryVersion(ctx, formID, id); err != nil {
		return EntryView{}, fmt.Errorf("read the version of a link's entry: %w", err)
	}
	switch req, ok, err := ps.ErasureRequest(ctx, formID, id); {
	case err != nil:
		return EntryView{}, fmt.Errorf("read the erasure request of a link's entry: %w", err)
	case ok:
		v.Erasure = &Erasure{State: "requested", RequestedAt: req.RequestedAt.UTC()}
	}
	return v, nil
}

// linkNotFound is the one answer to every link that opens nothing.
func linkNotFound() error { return problem.New(problem.CodeEntryLinkNotFound, "") }

// participantEntry is GET /v1/entries/{token}: the entry the
// participant's link opens.
func (h *Handler) participantEntry(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Participants == nil {
		return linkNotFound()
	}
	if err := h.entryOrigin(w, r); err != nil {
		return err
	}
	v, err := h.links().View(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	return writeEntry(w, v)
}

// Links opens participants' links, for the API (GET, PATCH, cancel,
// erasure of /v1/entries/{token}) and the hosted page (/e/{token}) alike.
type Links struct {
	Store  ParticipantStore
	Hasher *form.Hasher
	// Forms finds the entry's form (edit_until, self_erase, validation);
	// Now is the clock.
	Forms Forms
	Now   func() time.Time
	// Erase, if set, erases at once on forms with self_erase; Audit, if
	// set, records erasure requests for the organizer.
	Erase Eraser
	Audit Auditor
}

// View reads what a link token opens (ViewEntry), with when changes
// close and, on forms with check-in, its ticket.
func (l Links) View(ctx context.Context, token string) (EntryView, error) {
	v, err := ViewEntry(ctx, l.Store, l.Hasher, token)
	if err != nil || l.Forms == nil {
		return v, err
	}
	if f := l.Forms.Get(v.Form); f != nil {
		if until, ok := f.Def.EditDeadline(); ok {
			until = until.UTC()
			v.EditUntil = &until
		}
	}
	return withTicket(v, l.Forms.Get(v.Form), l.Hasher), nil
}

// CancelEntry cancels the entry a link opens, once: as an organizer's
// cancel does (store.Cancel, one transaction), its place goes to the
// next on the waitlist exactly once. Cancelling a cancelled entry
// changes nothing and is no error (changed false); an entry that was
// never live (pending review, refused) is store.ErrNotLive.
func CancelEntry(ctx context.Context, ps ParticipantStore, hasher *form.Hasher, token string) (v EntryView, changed bool, err error) {
	if v, err = ViewEntry(ctx, ps, hasher, token); err != nil {
		return v, false, err
	}
	_, err = ps.Cancel(ctx, v.Form, v.ID)
	switch {
	case errors.Is(err, store.ErrNotLive):
		v, verr := ViewEntry(ctx, ps, hasher, token)
		if verr == nil && v.Status == store.StatusCancelled {
			return v, false, nil
		}
		return v, false, err
	case err != nil:
		return v, false, fmt.Errorf("cancel the entry of a link: %w", err)
	}
	v, err = ViewEntry(ctx, ps, hasher, token)
	return v, true, err
}

// participantCancel is POST /v1/entries/{token}/cancel: 200 with the
// entry as it is now, and Formd-Changed saying whether this call
// cancelled it.
func (h *Handler) participantCancel(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Participants == nil {
		return linkNotFound()
	}
	if err := h.entryOrigin(w, r); err != nil {
		return err
	}
	v, changed, err := CancelEntry(r.Context(), h.cfg.Participants, h.cfg.Hasher, r.PathValue("token"))
	if err != nil {
		return err
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the entry of a link: %w", err)
	}
	w.Header().Set("Formd-Changed", strconv.FormatBool(changed))
	writeJSON(w, http.StatusOK, body)
	return nil
}

// Cancel cancels the entry a link opens (CancelEntry), for the hosted page.
func (l Links) Cancel(ctx context.Context, token string) (EntryView, bool, error) {
	return CancelEntry(ctx, l.Store, l.Hasher, token)
}
