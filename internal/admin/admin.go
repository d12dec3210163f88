// Package admin is the owner's HTTP API, behind the admin token: apply form
// definitions, export entries, cancel an entry, list and retry dead letters.
package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Store is the part of the store the admin API uses.
type Store interface {
	export.Source
	PutForms(ctx context.Context, forms []store.FormRecord) error
	Cancel(ctx context.Context, form, id string) ([]string, error)
	DeadLetters(ctx context.Context, limit int) ([]store.DeadLetter, error)
	ForgetDeadLetter(ctx context.Context, form, key string) (bool, error)
	TokenValid(ctx context.Context, hash []byte) (bool, error)
}

// Forms is the server's form registry.
type Forms interface {
	Get(id string) *form.Form
	All() []*form.Form
	Refresh(ctx context.Context) error
}

// Redrive processes the journal entry of (form, key) again.
type Redrive func(ctx context.Context, form, key string) error

// Forget erases a person's entries across forms (erasure.Forget on the
// instance's store and journal).
type Forget func(ctx context.Context, p erasure.Person, dryRun bool) (erasure.Report, error)

// Deps are what the admin API acts on.
type Deps struct {
	Store   Store
	Forms   Forms
	Redrive Redrive
	Forget  Forget
	Log     *slog.Logger
}

// Handler serves /v1/admin/.
type Handler struct {
	store   Store
	forms   Forms
	redrive Redrive
	forget  Forget
	log     *slog.Logger
	maxBody int64
}

// New makes the handler.
func New(d Deps) *Handler {
	return &Handler{store: d.Store, forms: d.Forms, redrive: d.Redrive, forget: d.Forget, log: d.Log, maxBody: 4 << 20}
}

// Register adds the admin routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle("GET /v1/admin/forms", h.auth(h.listForms))
	mux.Handle("PUT /v1/admin/forms", h.auth(h.applyForms))
	mux.Handle("GET /v1/admin/forms/{form}/export", h.auth(h.export))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/cancel", h.auth(h.cancel))
	mux.Handle("GET /v1/admin/dead-letters", h.auth(h.deadLetters))
	mux.Handle("POST /v1/admin/dead-letters/{form}/{key}/retry", h.auth(h.retry))
	mux.Handle("POST /v1/admin/forget", h.auth(h.forgetPerson))
}

// NewToken makes an admin token and the hash the store keeps of it.
func NewToken() (token string, hash []byte) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("read random: %v", err)) // crypto/rand does not fail on supported systems
	}
	token = "fmd_" + base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashToken(token)
}

// HashToken is what the store keeps of a token: never the token itself.
func HashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

func (h *Handler) auth(fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h.authorize(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			if p := problem.From(err); p.Code == problem.CodeUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="formd admin"`)
			}
			problem.Write(w, r, h.log, err)
		}
	})
}

func (h *Handler) authorize(r *http.Request) error {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return problem.New(problem.CodeUnauthorized, "send Authorization: Bearer <admin token>")
	}
	valid, err := h.store.TokenValid(r.Context(), HashToken(strings.TrimSpace(tok)))
	if err != nil {
		return fmt.Errorf("check token: %w", err)
	}
	if !valid {
		return problem.New(problem.CodeUnauthorized, "the token is not valid")
	}
	return nil
}

type formSummary struct {
	ID       string    `json:"id"`
	Site     string    `json:"site"`
	Title    form.Text `json:"title,omitempty"`
	Fields   int       `json:"fields"`
	Capacity *int      `json:"capacity,omitempty"`
	WhenFull string    `json:"when_full,omitempty"`
}

func (h *Handler) listForms(w http.ResponseWriter, _ *http.Request) error {
	all := h.forms.All()
	out := make([]formSummary, len(all))
	for i, f := range all {
		out[i] = formSummary{ID: f.ID(), Site: f.Def.Site, Title: f.Def.Title, Fields: len(f.Fields()), Capacity: f.Def.Capacity, WhenFull: f.Def.WhenFull}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"forms": out})
}

// applyForms takes definitions (YAML or JSON) and stores them; the change
// reaches every instance within the forms refresh interval.
func (h *Handler) applyForms(w http.ResponseWriter, r *http.Request) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		return err
	}
	forms, err := form.Parse(raw, "request body")
	if err != nil {
		var de *form.DefinitionError
		if errors.As(err, &de) {
			p := problem.New(problem.CodeInvalidDefinition, de.Error())
			return p
		}
		return err
	}
	if err := h.store.PutForms(r.Context(), form.Records(forms)); err != nil {
		return fmt.Errorf("apply forms: %w", err)
	}
	if err := h.forms.Refresh(r.Context()); err != nil {
		h.log.Warn("forms applied; local refresh failed, the next periodic refresh will load them", "err", err)
	}
	ids := make([]string, len(forms))
	for i, f := range forms {
		ids[i] = f.ID()
	}
	return writeJSON(w, http.StatusOK, map[string]any{"applied": ids})
}

func (h *Handler) export(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" && format != "xlsx" {
		return problem.New(problem.CodeInvalidRequest, "format must be csv, jsonl or xlsx")
	}
	w.Header().Set("Content-Type", export.ContentType(format))
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, f.ID(), format))
	w.Header().Set("Cache-Control", "no-store")
	if err := export.Write(r.Context(), h.store, f, format, w); err != nil {
		// The status line is gone; cut the body short so it is not taken as whole.
		h.log.Error("export failed midway", "form", f.ID(), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) error {
	promoted, err := h.store.Cancel(r.Context(), r.PathValue("form"), r.PathValue("id"))
	if err != nil {
		return err
	}
	if promoted == nil {
		promoted = []string{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"cancelled": r.PathValue("id"), "promoted": promoted})
}

func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request) error {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	dls, err := h.store.DeadLetters(r.Context(), limit)
	if err != nil {
		return err
	}
	if dls == nil {
		dls = []store.DeadLetter{}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"dead_letters": dls})
}

func (h *Handler) retry(w http.ResponseWriter, r *http.Request) error {
	formID, key := r.PathValue("form"), r.PathValue("key")
	ok, err := h.store.ForgetDeadLetter(r.Context(), formID, key)
	if err != nil {
		return err
	}
	if !ok {
		return problem.New(problem.CodeEntryNotFound, "no dead letter for this form and key")
	}
	if err := h.redrive(r.Context(), formID, key); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"retried": key})
}

// forgetRequest names the person to forget.
type forgetRequest struct {
	Email  string `json:"email"`
	Phone  string `json:"phone"`
	Region string `json:"region"`
	DryRun bool   `json:"dry_run"`
}

// forgetAnswer says what was found and erased, never the value itself.
type forgetAnswer struct {
	What    string         `json:"what"`
	Entries int            `json:"entries"`
	Forms   map[string]int `json:"forms"`
	Erased  int            `json:"erased"`
	Pending int            `json:"pending"`
	DryRun  bool           `json:"dry_run"`
	// JournalKept says the journal's copies stay (a journal that cannot
	// delete them); they go by its own limits.
	JournalKept bool `json:"journal_kept,omitempty"`
}

// forgetPerson is POST /v1/admin/forget: erase every entry, across forms,
// of one e-mail address or phone number.
func (h *Handler) forgetPerson(w http.ResponseWriter, r *http.Request) error {
	var req forgetRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send a JSON object such as {"email": "ann@example.org"} or {"phone": "+8613800138000"}`)
	}
	rep, err := h.forget(r.Context(), erasure.Person{Email: req.Email, Phone: req.Phone, Region: req.Region}, req.DryRun)
	var ie *erasure.InputError
	if errors.As(err, &ie) {
		return problem.New(problem.CodeInvalidRequest, ie.Error())
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, forgetAnswer{What: rep.What, Entries: len(rep.Entries), Forms: rep.Forms(), Erased: rep.Erased,
		Pending: len(rep.Pending), DryRun: req.DryRun, JournalKept: rep.JournalKept})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}
