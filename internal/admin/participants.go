package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// ParticipantReads are what the organizer sees of participants' own
// actions: each entry's earlier versions (their changes), pending
// erasure requests, and drafts counted (store.Changes,
// store.ErasureRequests, store.DraftStats).
type ParticipantReads interface {
	Versions(ctx context.Context, form, id string) ([]store.EntryVersion, error)
	ErasureRequests(ctx context.Context, form string, limit int) ([]store.ErasureRequest, error)
	DraftCounts(ctx context.Context) ([]store.DraftCounts, error)
}

// EraseEntries erases entries named by id from the store and the
// journal (erasure.ForgetEntries on the instance's store and journal).
type EraseEntries func(ctx context.Context, entries []store.EntryRef) (erasure.Report, error)

func (h *Handler) registerParticipants(mux Mux) {
	mux.Handle("GET /v1/admin/forms/{form}/entries/{id}/versions", h.route(accounts.Read, true, h.versions))
	mux.Handle("GET /v1/admin/erasure-requests", h.route(accounts.Read, false, h.erasureRequests))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/erase", h.route(accounts.Forget, true, h.eraseEntry))
}

// entryVersionJSON is one earlier version of an entry.
type entryVersionJSON struct {
	Version    int       `json:"version"`
	Data       any       `json:"data"`
	Place      string    `json:"place,omitempty"`
	ReplacedAt time.Time `json:"replaced_at"`
}

// versions is GET …/entries/{id}/versions: the versions the
// participant's changes replaced, oldest first.
func (h *Handler) versions(w http.ResponseWriter, r *http.Request, c call) error {
	vs, err := h.Store.Versions(r.Context(), c.form.ID(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]entryVersionJSON, len(vs))
	for i, v := range vs {
		out[i] = entryVersionJSON{Version: v.Version, Data: v.Data, Place: v.Place, ReplacedAt: v.ReplacedAt.UTC()}
	}
	return writeJSON(w, http.StatusOK, out)
}

// erasureJSON is one pending erasure request.
type erasureJSON struct {
	Form        string    `json:"form"`
	Entry       string    `json:"entry"`
	RequestedAt time.Time `json:"requested_at"`
}

// PendingErasures lists the pending erasure requests on forms the
// principal may read ("" for every form), oldest first.
func (h *Handler) PendingErasures(ctx context.Context, p accounts.Principal, formID string) ([]store.ErasureRequest, error) {
	list, err := h.Store.ErasureRequests(ctx, formID, 500)
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, e := range list {
		if f := h.Forms.Get(e.Form); f != nil && p.Can(accounts.Read, f.Def.Site) {
			out = append(out, e)
		}
	}
	return out, nil
}

// erasureRequests is GET /v1/admin/erasure-requests[?form=]: the
// requests waiting for the organizer.
func (h *Handler) erasureRequests(w http.ResponseWriter, r *http.Request, c call) error {
	list, err := h.PendingErasures(r.Context(), c.p, r.URL.Query().Get("form"))
	if err != nil {
		return err
	}
	out := make([]erasureJSON, len(list))
	for i, e := range list {
		out[i] = erasureJSON{Form: e.Form, Entry: e.EntryID, RequestedAt: e.RequestedAt.UTC()}
	}
	return writeJSON(w, http.StatusOK, out)
}

// EraseEntry erases one entry (a participant's request granted) through
// the path formd forget takes, and records it in the audit log.
func (h *Handler) EraseEntry(ctx context.Context, p accounts.Principal, f *form.Form, id string) (erasure.Report, error) {
	if h.Erase == nil {
		return erasure.Report{}, fmt.Errorf("erase an entry: no eraser")
	}
	d, err := h.Store.Entry(ctx, f.ID(), id)
	if err != nil {
		return erasure.Report{}, err
	}
	rep, err := h.Erase(ctx, []store.EntryRef{{ID: d.ID, Form: d.Form, Key: d.Key, Site: f.Def.Site, Seq: d.Seq}})
	if err != nil {
		return rep, err
	}
	return rep, h.audit(ctx, call{p: p, form: f}, "entry.forget", id, rep.Detail())
}

// eraseEntry is POST …/entries/{id}/erase.
func (h *Handler) eraseEntry(w http.ResponseWriter, r *http.Request, c call) error {
	rep, err := h.EraseEntry(r.Context(), c.p, c.form, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"erased": rep.Erased, "files": rep.Files, "pending": len(rep.Pending)})
}
