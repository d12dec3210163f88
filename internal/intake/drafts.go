package intake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// DraftStore is the part of the store drafts use (store.Drafts, and
// store.UploadHolds to keep a draft's files as long as the draft).
type DraftStore interface {
	SaveDraft(ctx context.Context, p store.DraftSave) (store.Draft, error)
	Draft(ctx context.Context, form, key string, tokenHash []byte, now time.Time) (store.Draft, error)
	HoldUpload(ctx context.Context, id string, until time.Time) (bool, error)
}

// registerDrafts adds the drafts' routes (DESIGN §4 "Drafts").
func (h *Handler) registerDrafts(mux *http.ServeMux) {
	mux.Handle("PUT /v1/forms/{form}/drafts/{key}", h.wrap("draft-save", h.saveDraft))
	mux.Handle("GET /v1/forms/{form}/drafts/{key}", h.wrap("draft-read", h.readDraft))
	mux.Handle("GET /v1/forms/{form}/drafts", h.wrap("draft-read", h.readDraft))
	mux.Handle("POST /v1/forms/{form}/drafts/{key}/email", h.wrap("draft-email", h.emailDraft))
	mux.Handle("OPTIONS /v1/forms/{form}/drafts/{key}/email", h.wrap("preflight", h.draftPreflight))
	mux.Handle("OPTIONS /v1/forms/{form}/drafts/{key}", h.wrap("preflight", h.draftPreflight))
	mux.Handle("OPTIONS /v1/forms/{form}/drafts", h.wrap("preflight", h.draftPreflight))
}

// draftForm finds a form that keeps drafts, and applies its origins.
func (h *Handler) draftForm(w http.ResponseWriter, r *http.Request) (*form.Form, error) {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return nil, problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return nil, err
	}
	if !f.Def.Drafts || h.cfg.Drafts == nil {
		return nil, problem.New(problem.CodeDraftsDisabled, "this form does not save drafts")
	}
	w.Header().Set("Access-Control-Expose-Headers", "ETag, Location, Retry-After")
	return f, nil
}

// saveDraft is PUT /v1/forms/{form}/drafts/{key}: the answers typed so
// far, saved under the submission's key by one committed store write
// before the answer. Without a Draft-Token it creates the draft and
// answers 201 with its resume token (member resume, never shown again:
// the store keeps its hash); with one it needs the version read
// (If-Match) and answers 200, or 412 with the current version.
func (h *Handler) saveDraft(w http.ResponseWriter, r *http.Request) error {
	now := h.cfg.Now()
	f, err := h.draftForm(w, r)
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	if !validKey(key) {
		return errBadKey
	}
	if !f.OpenAt(now) {
		return closedProblem(f, now)
	}
	data, err := draftBody(r, f, h.cfg.MaxBody)
	if err != nil {
		return err
	}
	if err := h.notJournaled(r.Context(), f.ID(), key); err != nil {
		return err
	}
	token := r.Header.Get("Draft-Token")
	p := store.DraftSave{Form: f.ID(), Site: f.Def.Site, Key: key, Data: data, Now: now, TTL: f.Def.DraftKept()}
	created := token == ""
	if created {
		if r.Header.Get("If-Match") != "" {
			return problem.New(problem.CodeInvalidRequest, "If-Match needs the draft's Draft-Token")
		}
		token = newDraftToken()
	} else {
		v, ok := parseVersion(r.Header.Get("If-Match"))
		if !ok {
			return problem.New(problem.CodeInvalidRequest, `a save of a draft carries the version it read: If-Match: "<version>" (the ETag of the last save or read)`)
		}
		p.Version = v
	}
	p.TokenHash = draftTokenHash(token)
	// The files the draft names are kept as long as the draft: held
	// before the save is answered, so a draft that says "saved" never
	// names a file its upload expiry deleted. (A hold that outlives a
	// refused save only keeps a file a little longer.)
	if err := h.holdDraftUploads(r.Context(), f, data, now.Add(p.TTL)); err != nil {
		return err
	}
	d, err := h.cfg.Drafts.SaveDraft(r.Context(), p)
	if err != nil {
		return draftProblem(w, err)
	}
	w.Header().Set("ETag", etag(d.Version))
	status := http.StatusOK
	doc := draftDoc{Form: d.Form, Key: d.Key, Version: d.Version, SavedAt: d.SavedAt.UTC(), ExpiresAt: d.ExpiresAt.UTC()}
	if created {
		status = http.StatusCreated
		doc.Resume = token
		doc.ResumeURL = "/f/" + url.PathEscape(f.ID()) + "?resume=" + url.QueryEscape(token)
		w.Header().Set("Location", "/v1/forms/"+url.PathEscape(f.ID())+"/drafts/"+url.PathEscape(key))
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode draft: %w", err)
	}
	writeJSON(w, status, body)
	return nil
}

// readDraft is GET /v1/forms/{form}/drafts/{key}, and GET
// /v1/forms/{form}/drafts for a resume link that carries only the token:
// the draft, with its version as ETag. An unknown token and an expired
// or erased draft are the same 404.
func (h *Handler) readDraft(w http.ResponseWriter, r *http.Request) error {
	f, err := h.draftForm(w, r)
	if err != nil {
		return err
	}
	token := r.Header.Get("Draft-Token")
	if token == "" {
		token = r.URL.Query().Get("resume")
	}
	if token == "" {
		return problem.New(problem.CodeDraftNotFound, "send the draft's resume token in a Draft-Token header")
	}
	d, err := h.cfg.Drafts.Draft(r.Context(), f.ID(), r.PathValue("key"), draftTokenHash(token), h.cfg.Now())
	if err != nil {
		return draftProblem(w, err)
	}
	body, err := json.Marshal(draftDoc{Form: d.Form, Key: d.Key, Version: d.Version, SavedAt: d.SavedAt.UTC(), ExpiresAt: d.ExpiresAt.UTC(), Data: d.Data})
	if err != nil {
		return fmt.Errorf("encode draft: %w", err)
	}
	w.Header().Set("ETag", etag(d.Version))
	writeJSON(w, http.StatusOK, body)
	return nil
}

// draftDoc is a draft as the API answers it.
type draftDoc struct {
	Form      string          `json:"form"`
	Key       string          `json:"key"`
	Version   int64           `json:"version"`
	SavedAt   time.Time       `json:"saved_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	Resume    string          `json:"resume,omitempty"`
	ResumeURL string          `json:"resume_url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// notJournaled refuses a draft for a key whose submission was sent
// already: journaled (decided or not) is submitted. The store refuses a
// key it decided in the save's own transaction; this covers a key the
// journal holds that the store has not decided yet.
func (h *Handler) notJournaled(ctx context.Context, formID, key string) error {
	_, found, err := h.journal.Lookup(ctx, formID, key)
	if err != nil {
		return fmt.Errorf("look up %s/%s in the journal: %w", formID, key, err)
	}
	if !found {
		return nil
	}
	status := statusProcessing
	if o, ok, err := h.outcomes.Outcome(ctx, formID, key); err != nil {
		return fmt.Errorf("look up %s/%s in the store: %w", formID, key, err)
	} else if ok {
		status = publicDecision(o.Status)
	}
	return &store.SubmittedDraftError{Status: status}
}

// draftProblem maps the store's draft errors to their answers: a stale
// save carries the current version (ETag and member version), a
// submitted key the entry's status.
func draftProblem(w http.ResponseWriter, err error) error {
	if st, ok := store.AsStaleDraft(err); ok {
		p := problem.New(problem.CodeDraftStale, fmt.Sprintf("the draft was saved again since: its version is %d", st.Current))
		p.Version = st.Current
		w.Header().Set("ETag", etag(st.Current))
		return p
	}
	if sd, ok := store.AsSubmittedDraft(err); ok {
		status := publicDecision(sd.Status)
		p := problem.New(problem.CodeDraftSubmitted, "the submission under this key was sent already: its status is "+status)
		p.EntryStatus = status
		return p
	}
	return err
}

// draftBody reads a draft's body: a JSON object of field → value. The
// e-mail and phone values that normalize are kept normalized, as a
// submission keeps them, so that forget finds the person's drafts by the
// same needles as their entries; everything else is kept as typed.
func draftBody(r *http.Request, f *form.Form, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return nil, problem.New(problem.CodeUnsupportedMediaType, "a draft is sent as application/json")
	}
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, problem.New(problem.CodeInvalidRequest, "the body could not be read")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, problem.New(problem.CodeInvalidRequest, "a draft is a JSON object of field → value")
	}
	for name, v := range fields {
		fd, ok := f.Field(name)
		var typed string
		if !ok || (fd.Type != form.TypeEmail && fd.Type != form.TypePhone) || json.Unmarshal(v, &typed) != nil {
			continue
		}
		var n string
		if fd.Type == form.TypeEmail {
			n, err = form.NormalizeEmail(typed)
		} else {
			n, err = form.NormalizePhone(typed, fd.Region)
		}
		if err == nil {
			fields[name] = form.JSONString(n)
		}
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encode draft: %w", err)
	}
	return b, nil
}

// holdDraftUploads moves the expiry of each upload the draft's file
// fields name ("upload:<id>", alone or in a list) to until. An upload
// that is not there (expired, or never made) is left to the submission's
// decision, which refuses it by name (upload-missing).
func (h *Handler) holdDraftUploads(ctx context.Context, f *form.Form, data []byte, until time.Time) error {
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("read draft: %w", err)
	}
	for name, v := range fields {
		fd, ok := f.Field(name)
		if !ok || fd.Type != form.TypeFile {
			continue
		}
		vals, ok := v.([]any)
		if !ok {
			vals = []any{v}
		}
		for _, x := range vals {
			s, _ := x.(string)
			id, ok := strings.CutPrefix(s, "upload:")
			if !ok || id == "" {
				continue
			}
			if _, err := h.cfg.Drafts.HoldUpload(ctx, id, until); err != nil {
				return fmt.Errorf("hold the draft's upload %s: %w", id, err)
			}
		}
	}
	return nil
}

// newDraftToken is a resume token: 256 random bits.
func newDraftToken() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// draftTokenHash is what the store keeps of a resume token. The token
// has 256 random bits, so a plain hash cannot be reversed by trying.
func draftTokenHash(token string) []byte {
	h := sha256.Sum256([]byte("formd-draft\x00" + token))
	return h[:]
}

func etag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

// parseVersion reads an If-Match of one version ("3", W/"3" or 3).
func parseVersion(h string) (int64, bool) {
	h = strings.TrimPrefix(strings.TrimSpace(h), "W/")
	h = strings.Trim(h, `"`)
	v, err := strconv.ParseInt(h, 10, 64)
	return v, err == nil && v > 0
}

// draftPreflight answers CORS preflight requests for the drafts' routes.
func (h *Handler) draftPreflight(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	return preflightAnswer(w, "GET, PUT, POST, OPTIONS", "Content-Type, Draft-Token, If-Match")
}
