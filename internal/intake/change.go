package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Auditor records a participant's request in the audit log
// (accounts.Store's Record), for the organizer.
type Auditor interface {
	Record(ctx context.Context, e accounts.Entry) error
}

// Eraser erases entries now: erasure.ForgetEntries on the instance's
// store and journal (server.Server.ForgetEntries).
type Eraser func(ctx context.Context, entries []store.EntryRef) (erasure.Report, error)

// links is the handler's Links.
func (h *Handler) links() Links {
	return Links{Store: h.cfg.Participants, Hasher: h.cfg.Hasher, Forms: h.forms, Now: h.cfg.Now, Erase: h.cfg.Erase, Audit: h.cfg.Audit}
}

// parseIfMatch reads the version a change names: If-Match "3" (the ETag
// of GET /v1/entries/{token}); 0 when absent or not a version.
func parseIfMatch(v string) int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
	n, err := strconv.Atoi(strings.Trim(v, `"`))
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// ETag is the entity tag of an entry's version.
func ETag(version int) string { return `"` + strconv.Itoa(version) + `"` }

// ChangeResult is what a participant's change did: the entry as it is
// now, and whether this call changed it (false for a retry of the
// change that made this version, and for the same answers again).
type ChangeResult struct {
	View     EntryView
	Changed  bool
	Replayed bool
}

// Change changes the answers of the entry a link opens, from version
// (If-Match): validated as a new submission is (form.Validate), then
// decided in one store transaction (store.Changes) — the participant and
// the option's place decided again, the earlier version kept, the
// submission.updated event written. Files cannot be changed: the entry's
// own files stay, and a change naming others is refused.
func (l Links) Change(ctx context.Context, token string, version int, values map[string]any) (ChangeResult, error) {
	v, err := ViewEntry(ctx, l.Store, l.Hasher, token)
	if err != nil {
		return ChangeResult{}, err
	}
	if version < 1 {
		return ChangeResult{}, problem.New(problem.CodeIfMatchRequired, "send If-Match with the version read (the ETag of GET /v1/entries/{token})")
	}
	var f *form.Form
	if l.Forms != nil {
		f = l.Forms.Get(v.Form)
	}
	now := l.now()
	if f == nil || !f.Def.EditableAt(now) {
		return ChangeResult{}, editClosed(f)
	}
	var current map[string]any
	_ = json.Unmarshal(v.Data, &current)
	values = maps.Clone(values)
	for _, fd := range f.Fields() {
		if fd.Type == form.TypeFile {
			if cur, ok := current[fd.Name]; ok {
				values[fd.Name] = cur
			} else {
				delete(values, fd.Name)
			}
		}
	}
	acc, err := f.Validate(values, l.Hasher)
	if err != nil {
		return ChangeResult{}, err
	}
	if !sameUploads(current[form.UploadsKey], acc.Uploads) {
		return ChangeResult{}, &form.ValidationError{Errors: []form.FieldError{{Field: acc.Uploads[0].Field, Code: "files-unchanged", Message: "files cannot be changed from the link"}}}
	}
	r, err := l.Store.Change(ctx, store.Change{Form: v.Form, ID: v.ID, Version: version, Data: acc.Data,
		Fingerprint: acc.Fingerprint, Claims: acc.Claims, Now: now})
	if err != nil {
		if se, ok := store.AsStaleEntry(err); ok {
			p := problem.New(problem.CodeEntryStale, fmt.Sprintf("the current version is %d", se.Current))
			p.Version = int64(se.Current)
			return ChangeResult{}, p
		}
		if of, ok := store.AsOptionFull(err); ok {
			p := problem.New(problem.CodeCapacityReached, fmt.Sprintf("%q has no place left; your place is kept", of.Option))
			p.Option = of.Option
			return ChangeResult{}, p
		}
		if errors.Is(err, store.ErrNotFound) {
			return ChangeResult{}, linkNotFound()
		}
		return ChangeResult{}, fmt.Errorf("change the entry of a link: %w", err)
	}
	v, err = ViewEntry(ctx, l.Store, l.Hasher, token)
	return ChangeResult{View: v, Changed: !r.Replayed && !r.Same, Replayed: r.Replayed}, err
}

// sameUploads says a change names exactly the uploads the entry holds.
func sameUploads(current any, refs []form.UploadRef) bool {
	var had []string
	if l, ok := current.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				had = append(had, s)
			}
		}
	}
	got := make([]string, len(refs))
	for i, r := range refs {
		got[i] = r.ID
	}
	slices.Sort(had)
	slices.Sort(got)
	return slices.Equal(had, got)
}

// editClosed is the answer to a change after edit_until, or on a form
// that allows none.
func editClosed(f *form.Form) error {
	if f == nil {
		return problem.New(problem.CodeEditClosed, "this form no longer takes changes")
	}
	if until, ok := f.Def.EditDeadline(); ok {
		return problem.New(problem.CodeEditClosed, "changes closed at "+until.UTC().Format(time.RFC3339))
	}
	return problem.New(problem.CodeEditClosed, "this form does not allow changes (it has no edit_until)")
}

func (l Links) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// Erasure says where a participant's request stands.
type Erasure struct {
	// State is "requested" (waiting for the organizer) or "done" (the
	// data is erased: the link opens nothing any more).
	State       string    `json:"erasure"`
	RequestedAt time.Time `json:"requested_at"`
}

// RequestErasure records the participant's request that the entry a link
// opens be erased, once (a second request is the first), and tells the
// organizer through the audit log; on a form with self_erase it is
// erased at once, through the path formd forget takes
// (erasure.ForgetEntries), and the request is done.
func (l Links) RequestErasure(ctx context.Context, token string) (Erasure, error) {
	v, err := ViewEntry(ctx, l.Store, l.Hasher, token)
	if err != nil {
		return Erasure{}, err
	}
	now := l.now()
	req, created, err := l.Store.RequestErasure(ctx, v.Form, v.ID, now)
	if errors.Is(err, store.ErrNotFound) {
		return Erasure{}, linkNotFound()
	}
	if err != nil {
		return Erasure{}, fmt.Errorf("record an erasure request: %w", err)
	}
	var f *form.Form
	if l.Forms != nil {
		f = l.Forms.Get(v.Form)
	}
	site := ""
	if f != nil {
		site = f.Def.Site
	}
	if created && l.Audit != nil {
		if err := l.Audit.Record(ctx, accounts.Entry{At: now, Actor: "participant", Action: "entry.erasure-request", Site: site,
			Form: v.Form, Target: v.ID}); err != nil {
			return Erasure{}, fmt.Errorf("record the erasure request in the audit log: %w", err)
		}
	}
	out := Erasure{State: "requested", RequestedAt: req.RequestedAt.UTC()}
	if f == nil || !f.Def.SelfErase || l.Erase == nil {
		return out, nil
	}
	d, err := l.Store.Entry(ctx, v.Form, v.ID)
	if err != nil {
		return Erasure{}, fmt.Errorf("read the entry to erase: %w", err)
	}
	rep, err := l.Erase(ctx, []store.EntryRef{{ID: d.ID, Form: d.Form, Key: d.Key, Site: site, Seq: d.Seq}})
	if err != nil {
		return Erasure{}, fmt.Errorf("erase at the participant's request: %w", err)
	}
	if rep.Erased == 0 {
		// Still being decided (its journal copy is pending): the request
		// stays for the organizer, or the participant's next request.
		return out, nil
	}
	if l.Audit != nil {
		if err := l.Audit.Record(ctx, accounts.Entry{At: now, Actor: "participant", Action: "entry.forget", Site: site,
			Form: v.Form, Target: v.ID, Detail: "self_erase: " + rep.Detail()}); err != nil {
			return Erasure{}, fmt.Errorf("record the erasure in the audit log: %w", err)
		}
	}
	out.State = "done"
	return out, nil
}

// participantChange is PATCH /v1/entries/{token}: 200 with the entry as
// it is now and its version in ETag; Formd-Changed says whether this call
// changed it, Idempotent-Replayed that it was a retry of the change that
// made this version.
func (h *Handler) participantChange(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Participants == nil {
		return linkNotFound()
	}
	if err := h.entryOrigin(w, r); err != nil {
		return err
	}
	b, err := decodeBodyWith(r, h.cfg.MaxBody, nil)
	if err != nil {
		return err
	}
	res, err := h.links().Change(r.Context(), r.PathValue("token"), parseIfMatch(r.Header.Get("If-Match")), b.values)
	if err != nil {
		var p *problem.Problem
		if errors.As(err, &p) && p.Code == problem.CodeEntryStale {
			w.Header().Set("ETag", ETag(int(p.Version)))
		}
		return err
	}
	w.Header().Set("Formd-Changed", strconv.FormatBool(res.Changed))
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return writeEntry(w, res.View)
}

// participantErasure is POST /v1/entries/{token}/erasure: 202 while the
// request waits for the organizer, 200 when the data was erased now.
func (h *Handler) participantErasure(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.Participants == nil {
		return linkNotFound()
	}
	if err := h.entryOrigin(w, r); err != nil {
		return err
	}
	e, err := h.links().RequestErasure(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode an erasure request: %w", err)
	}
	status := http.StatusAccepted
	if e.State == "done" {
		status = http.StatusOK
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	writeJSON(w, status, body)
	return nil
}

// writeEntry answers with the entry a link opens and its version.
func writeEntry(w http.ResponseWriter, v EntryView) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the entry of a link: %w", err)
	}
	// The link is a capability: no referrer leaks it, no cache keeps it.
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("ETag", ETag(v.Version))
	writeJSON(w, http.StatusOK, body)
	return nil
}
