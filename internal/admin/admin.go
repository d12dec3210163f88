// Package admin is the owner's HTTP API under /v1/admin/: apply form
// definitions, read and export entries, cancel an entry, mark it spam or
// not spam, forget a person, list and retry dead letters. Every request
// is made by a principal (an account's session or API token, or the
// installation's admin token) and every route checks its role and sites:
// a form outside the principal's sites is not found, an action its role
// does not allow is forbidden. Every action is recorded in the audit log.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Store is the part of the store the admin API uses.
type Store interface {
	export.Source
	PutForms(ctx context.Context, forms []form.Record) error
	Cancel(ctx context.Context, form, id string) ([]string, error)
	MarkSpam(ctx context.Context, form, id string) ([]string, error)
	NotSpam(ctx context.Context, form, id string) (store.Outcome, error)
	store.Reviewer
	store.Checkins
	Entries(ctx context.Context, q store.EntryQuery) ([]store.Row, error)
	DeadLetters(ctx context.Context, limit int) ([]store.DeadLetter, error)
	ForgetDeadLetter(ctx context.Context, form, key string) (bool, error)
	// CountPlaces counts entries option by option: the proof page and
	// the audit.
	CountPlaces(ctx context.Context, form string) ([]store.PlaceCount, error)
	ConsoleReads
	store.FormHistory
	store.FormPurge
	// Erase is retention's step, which deleting a form erases its
	// entries' data with (erasure.EraseForm).
	Erase(ctx context.Context, form string, before time.Time, limit int) (int, error)
	ParticipantReads
}

// Forms is the server's form registry.
type Forms interface {
	Get(id string) *form.Form
	Site(id string) *form.Site
	All() []*form.Form
	Refresh(ctx context.Context) error
}

// Auth is who makes a request and the audit log its actions go to
// (accounts.Service).
type Auth interface {
	Authenticate(r *http.Request) (accounts.Principal, error)
	CheckCSRF(r *http.Request, p accounts.Principal) error
	Record(ctx context.Context, e accounts.Entry) error
}

// Redrive processes the journal entry of (form, key) again.
type Redrive func(ctx context.Context, form, key string) error

// Forget erases a person's entries across forms, on the sites allow
// accepts (erasure.Forget on the instance's store and journal).
type Forget func(ctx context.Context, p erasure.Person, allow func(site string) bool, dryRun bool) (erasure.Report, error)

// Deps are what the admin API acts on.
type Deps struct {
	Store   Store
	Forms   Forms
	Auth    Auth
	Redrive Redrive
	Forget  Forget
	// Erase erases entries by id (a participant's erasure request
	// granted); nil refuses.
	Erase EraseEntries
	Log   *slog.Logger
	Now   func() time.Time
	// CheckURL checks webhook addresses of applied forms (the server's
	// guard); nil checks their syntax only.
	CheckURL func(string) error

	// The console's: the journal's reads and its per-form counts (nil
	// for a journal that cannot count), accounts and tokens, and
	// processors for a replay.
	Journal Journal
	Counter journal.FormCounter
	// Pruner and Forgetter delete the journal's copies of a deleted
	// form's entries (nil for a journal that cannot: they stay until its
	// own limits remove them).
	Pruner       journal.Pruner
	Forgetter    journal.Forgetter
	Accounts     AccountAdmin
	NewProcessor replay.NewProcessor
	// Outbox is the store's deliveries (webhooks and e-mail), nil for
	// none; Wake tells the dispatcher to look for work after a
	// redelivery (nil: it finds it at its next poll).
	Outbox OutboxStore
	Wake   func()
	// Deliveries are an entry's deliveries as the console shows them;
	// New makes them from Outbox when it is nil.
	Deliveries Deliveries
	// TrustedProxies say whose X-Forwarded-For to believe for a client's
	// address (a password change counts against it).
	TrustedProxies []netip.Prefix
	// Files lists an entry's files with signed links, for exports; nil
	// leaves file fields as their upload:<id> references.
	Files export.FileLister
	// FilesFor lists them with links valid for ttl (0: --link-ttl) that
	// start with base when the server has no --public-url, for exports
	// for people, whose links must be absolute; nil uses Files.
	FilesFor func(base string, ttl time.Duration) export.FileLister
	// SpamReasons says why intake classed an entry as spam (the store's
	// notes, store.Challenges); nil shows none.
	SpamReasons SpamReasons
	// Refusals counts what intake turned away before keeping anything
	// (a closed form, values to fix); nil shows none.
	Refusals RefusalCounts
	// Hasher signs tickets (package ticket) with the installation's
	// secret; TicketsRefused counts the tickets the door refused
	// (NewTicketsRefused), nil for none.
	Hasher         *form.Hasher
	TicketsRefused *prometheus.CounterVec
}

// RefusalCounts reads a form's refusals at intake by reason (the store's
// tally, store.Refusals).
type RefusalCounts interface {
	RefusalsOf(ctx context.Context, form string) (map[string]int64, error)
}

// SpamReasons reads why intake classed (form, key) as spam.
type SpamReasons interface {
	SpamReason(ctx context.Context, form, key string) (string, error)
}

// ClientIP is the request's client address, as the trusted proxies say.
func (h *Handler) ClientIP(r *http.Request) string { return intake.ClientIP(r, h.TrustedProxies) }

// Handler serves /v1/admin/.
type Handler struct {
	Deps
	// MCP serves the MCP tools at /v1/admin/mcp (package agent, which
	// is built on this handler, so it is set after New); nil: 404.
	MCP     http.Handler
	maxBody int64
	jobs    jobs
}

// New makes the handler.
func New(d Deps) *Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Deliveries == nil && d.Outbox != nil {
		d.Deliveries = &StoreDeliveries{Store: d.Outbox, Forms: d.Forms, Now: d.Now, Wake: d.Wake}
	}
	h := &Handler{Deps: d, maxBody: 4 << 20}
	h.jobs.ctx, h.jobs.cancel = context.WithCancel(context.Background())
	return h
}

// Mux is where routes are registered: an *http.ServeMux, or a recorder
// that lists them (the OpenAPI test).
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the admin routes to mux.
func (h *Handler) Register(mux Mux) {
	mux.Handle("GET /v1/admin/forms", h.route(accounts.Read, false, h.listForms))
	mux.Handle("PUT /v1/admin/forms", h.route(accounts.EditForms, false, h.applyForms))
	mux.Handle("GET /v1/admin/forms/{form}/export", h.route(accounts.Read, true, h.export))
	mux.Handle("GET /v1/admin/forms/{form}/entries", h.route(accounts.Read, true, h.entries))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/cancel", h.route(accounts.Act, true, h.cancel))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/spam", h.route(accounts.Act, true, h.markSpam))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/not-spam", h.route(accounts.Act, true, h.notSpam))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/approve", h.route(accounts.Act, true, h.reviewOne(true)))
	mux.Handle("POST /v1/admin/forms/{form}/entries/{id}/decline", h.route(accounts.Act, true, h.reviewOne(false)))
	mux.Handle("POST /v1/admin/forms/{form}/review", h.route(accounts.Act, true, h.reviewMany))
	mux.Handle("GET /v1/admin/dead-letters", h.route(accounts.Read, false, h.deadLetters))
	mux.Handle("POST /v1/admin/dead-letters/{form}/{key}/retry", h.route(accounts.Act, true, h.retry))
	mux.Handle("POST /v1/admin/forget", h.route(accounts.Forget, false, h.forgetPerson))
	mux.Handle("POST /v1/admin/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.MCP == nil {
			problem.Write(w, r, h.Log, problem.New(problem.CodeNotFound, ""))
			return
		}
		h.MCP.ServeHTTP(w, r)
	}))
	h.registerConsole(mux)
	h.registerDeliveries(mux)
	h.registerBuild(mux)
	h.registerCheckins(mux)
}

// call is one admin request: who makes it and, for a form's route, the
// form.
type call struct {
	p    accounts.Principal
	form *form.Form
}

// site is the call's form's site, "" for a route of no form.
func (c call) site() string {
	if c.form == nil {
		return ""
	}
	return c.form.Def.Site
}

// route authenticates a request and checks it: a cookie session's change
// carries its CSRF token; a form's route names a form of the principal's
// sites (else it is not found, so the URL reveals nothing) and the role
// allows the action there. Routes of no form check the action on every
// site the principal has, and filter what they read by site.
func (h *Handler) route(action accounts.Action, perForm bool, fn func(http.ResponseWriter, *http.Request, call) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h.serve(w, r, action, perForm, fn)
		if err == nil {
			return
		}
		if errors.Is(err, accounts.ErrUnauthenticated) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="formd admin"`)
		}
		problem.Write(w, r, h.Log, err)
	})
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, action accounts.Action, perForm bool, fn func(http.ResponseWriter, *http.Request, call) error) error {
	p, err := h.Auth.Authenticate(r)
	if err != nil {
		return err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := h.Auth.CheckCSRF(r, p); err != nil {
			return err
		}
	}
	c := call{p: p}
	if perForm {
		if c.form, err = h.Authorize(p, r.PathValue("form"), action); err != nil {
			return err
		}
	} else if !p.Can(action, firstSite(p)) {
		return accounts.ErrForbidden
	}
	return fn(w, r, c)
}

// firstSite is a site the principal has, to check a role on a route of no
// form: every principal has at least one.
func firstSite(p accounts.Principal) string {
	if len(p.Sites) == 0 || p.EverySite() {
		return ""
	}
	return p.Sites[0]
}

// audit records an action; a failure to record it fails the request, so
// nothing happens unrecorded.
func (h *Handler) audit(ctx context.Context, c call, action, target, detail string) error {
	form := ""
	if c.form != nil {
		form = c.form.ID()
	}
	if err := h.Auth.Record(ctx, accounts.Entry{At: h.Now(), Actor: c.p.String(), Action: action, Site: c.site(), Form: form, Target: target, Detail: detail}); err != nil {
		return fmt.Errorf("record %s in the audit log: %w", action, err)
	}
	return nil
}

type formSummary struct {
	ID         string     `json:"id"`
	Site       string     `json:"site"`
	Title      form.Text  `json:"title,omitempty"`
	Fields     int        `json:"fields"`
	Capacity   *int       `json:"capacity,omitempty"`
	WhenFull   string     `json:"when_full,omitempty"`
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
}

// listForms lists the principal's forms; archived ones only with
// ?archived=true (then with their archived_at).
func (h *Handler) listForms(w http.ResponseWriter, r *http.Request, c call) error {
	archives, err := h.Store.Archives(r.Context())
	if err != nil {
		return err
	}
	withArchived := r.URL.Query().Get("archived") == "true"
	out := []formSummary{}
	for _, f := range h.Forms.All() {
		a, archived := archives[f.ID()]
		if !c.p.Can(accounts.Read, f.Def.Site) || (archived && !withArchived) {
			continue
		}
		s := formSummary{ID: f.ID(), Site: f.Def.Site, Title: f.Def.Title, Fields: len(f.Fields()), Capacity: f.Def.Capacity, WhenFull: f.Def.WhenFull}
		if archived {
			at := a.At.UTC()
			s.ArchivedAt = &at
		}
		out = append(out, s)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"forms": out})
}

// applyForms takes definitions (YAML or JSON) and stores them; the change
// reaches every instance within the forms refresh interval.
func (h *Handler) applyForms(w http.ResponseWriter, r *http.Request, c call) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		return err
	}
	ids, err := h.ApplyForms(r.Context(), c.p, raw, r.URL.Query().Get("confirm"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"applied": ids})
}

func (h *Handler) export(w http.ResponseWriter, r *http.Request, c call) error {
	f := c.form
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "csv"
	}
	if format != "csv" && format != "jsonl" && format != "xlsx" {
		return problem.New(problem.CodeInvalidRequest, "format must be csv, jsonl or xlsx")
	}
	q := r.URL.Query()
	opts := export.Options{Labels: q.Get("header") == "labels", Lang: q.Get("lang"), Files: h.Files, People: q.Get("for") == "people"}
	if q.Get("history") == "1" {
		// The participants' changes: each entry's earlier versions.
		if format != "jsonl" {
			return problem.New(problem.CodeInvalidRequest, "history=1 is exported with format=jsonl (each row's member history)")
		}
		opts.History = h.Store.Versions
	}
	if opts.People {
		// For people (issue 34): times in the organizer's zone (the
		// console sends the browser's), file links absolute and valid as
		// long as the owner chose.
		if tz := q.Get("tz"); tz != "" {
			z, err := time.LoadLocation(tz)
			if err != nil {
				return problem.New(problem.CodeInvalidRequest, "tz must be a time zone such as Asia/Shanghai or UTC")
			}
			opts.Zone = z
		}
		var ttl time.Duration
		if v := q.Get("link_ttl"); v != "" {
			d, ok := linkTTL(v)
			if !ok {
				return problem.New(problem.CodeInvalidRequest, "link_ttl must be a duration from 1m to 7d, such as 1h, 24h or 7d")
			}
			ttl = d
		}
		if h.FilesFor != nil {
			opts.Files = h.FilesFor(requestBase(r), ttl)
		}
	}
	sel, err := h.ParseSelection(f, r.URL.Query())
	if err != nil {
		return err
	}
	if !sel.All() {
		opts.Rows = h.SelectionRows(f, sel)
	}
	w.Header().Set("Content-Type", export.ContentType(format))
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, f.ID(), format))
	w.Header().Set("Cache-Control", "no-store")
	if err := export.Write(r.Context(), h.Store, f, format, &slowReaderWriter{w: w, rc: http.NewResponseController(w)}, opts); err != nil {
		// The status line is gone; cut the body short so it is not taken as whole.
		h.Log.Error("export failed midway", "form", f.ID(), "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// slowReaderWriter moves the connection's write deadline on as an export
// streams, so that a long export to a slow reader is not cut by the
// server's WriteTimeout: each write must still make progress within a
// minute.
type slowReaderWriter struct {
	w        io.Writer
	rc       *http.ResponseController
	extended time.Time
}

func (s *slowReaderWriter) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(s.extended) > 10*time.Second {
		// Without a deadline to move (a test recorder), nothing to do.
		_ = s.rc.SetWriteDeadline(now.Add(time.Minute))
		s.extended = now
	}
	return s.w.Write(p)
}

// entryJSON is an entry as the admin API lists it.
type entryJSON struct {
	ID         string          `json:"id"`
	Key        string          `json:"key"`
	Status     string          `json:"status"`
	ReceivedAt time.Time       `json:"received_at"`
	Data       json.RawMessage `json:"data"`
	Extra      json.RawMessage `json:"extra,omitempty"`
}

// entries is GET /v1/admin/forms/{form}/entries: a page of the form's
// entries, newest first, filtered by status (?status=spam, several
// comma-separated) and time (?since, ?until, RFC 3339); ?before is the
// next cursor of the previous page.
func (h *Handler) entries(w http.ResponseWriter, r *http.Request, c call) error {
	qv := r.URL.Query()
	q := store.EntryQuery{Form: c.form.ID()}
	if s := qv.Get("status"); s != "" {
		q.Statuses = strings.Split(s, ",")
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v := qv.Get(t.name); v != "" {
			ts, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return problem.New(problem.CodeInvalidRequest, t.name+" must be an RFC 3339 time such as 2027-03-01T09:00:00+08:00")
			}
			*t.dst = ts
		}
	}
	if v := qv.Get("before"); v != "" {
		cur, err := parseCursor(v)
		if err != nil {
			return problem.New(problem.CodeInvalidRequest, "before must be the next cursor of a previous page")
		}
		q.Before = cur
	}
	q.Limit, _ = strconv.Atoi(qv.Get("limit"))
	rows, err := h.Store.Entries(r.Context(), q)
	if err != nil {
		return err
	}
	out := make([]entryJSON, len(rows))
	for i, row := range rows {
		data, extra := export.SplitExtra(row.Data)
		out[i] = entryJSON{ID: row.ID, Key: row.Key, Status: row.Status, ReceivedAt: row.ReceivedAt.UTC(), Data: data, Extra: extra}
	}
	var next *string
	if len(rows) == store.PageSize(q.Limit) {
		last := rows[len(rows)-1]
		cur := strconv.FormatUint(last.Seq, 10) + ":" + last.ID
		next = &cur
	}
	return writeJSON(w, http.StatusOK, map[string]any{"entries": out, "next": next})
}

// parseCursor reads "seq:id".
func parseCursor(s string) (store.Cursor, error) {
	seq, id, ok := strings.Cut(s, ":")
	// 63 bits: the stores keep sequences as signed 64-bit integers, and a
	// larger one must be the client's mistake (400), not the store's (500).
	n, err := strconv.ParseUint(seq, 10, 63)
	if !ok || err != nil || id == "" {
		return store.Cursor{}, errors.New("bad cursor")
	}
	return store.Cursor{Seq: n, ID: id}, nil
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, c call) error {
	id := r.PathValue("id")
	promoted, err := h.Cancel(r.Context(), c.p, c.form, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"cancelled": id, "promoted": nonNil(promoted)})
}

// markSpam is POST …/entries/{id}/spam: the entry is taken out as spam,
// its place freed and the waitlist promoted.
func (h *Handler) markSpam(w http.ResponseWriter, r *http.Request, c call) error {
	id := r.PathValue("id")
	promoted, err := h.MarkSpam(r.Context(), c.p, c.form, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"spam": id, "promoted": nonNil(promoted)})
}

// notSpam is POST …/entries/{id}/not-spam: a submission classed as spam is
// decided again as a real one.
func (h *Handler) notSpam(w http.ResponseWriter, r *http.Request, c call) error {
	id := r.PathValue("id")
	o, err := h.NotSpam(r.Context(), c.p, c.form, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": o.Status})
}

func promotedDetail(promoted []string) string {
	if len(promoted) == 0 {
		return ""
	}
	return "promoted " + strings.Join(promoted, ",")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (h *Handler) deadLetters(w http.ResponseWriter, r *http.Request, c call) error {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	dls, err := h.Store.DeadLetters(r.Context(), limit)
	if err != nil {
		return err
	}
	out := []store.DeadLetter{}
	for _, d := range dls {
		if f := h.Forms.Get(d.Form); f != nil && c.p.Can(accounts.Read, f.Def.Site) || f == nil && c.p.EverySite() {
			out = append(out, d)
		}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"dead_letters": out})
}

func (h *Handler) retry(w http.ResponseWriter, r *http.Request, c call) error {
	key := r.PathValue("key")
	if err := h.RetryDeadLetter(r.Context(), c.p, c.form, key); err != nil {
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
	// Files counts the erased entries' files: served no more, their
	// bytes deleted by the next pass.
	Files   int  `json:"files"`
	Pending int  `json:"pending"`
	DryRun  bool `json:"dry_run"`
	// JournalKept says the journal's copies stay (a journal that cannot
	// delete them); they go by its own limits.
	JournalKept bool `json:"journal_kept,omitempty"`
	// Drafts is how many of the person's saved drafts were found (and,
	// unless in a dry run, deleted).
	Drafts int `json:"drafts"`
}

// forgetPerson is POST /v1/admin/forget: erase every entry, across forms,
// of one e-mail address or phone number.
func (h *Handler) forgetPerson(w http.ResponseWriter, r *http.Request, c call) error {
	var req forgetRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send a JSON object such as {"email": "ann@example.org"} or {"phone": "+8613800138000"}`)
	}
	rep, err := h.ForgetPerson(r.Context(), c.p, erasure.Person{Email: req.Email, Phone: req.Phone, Region: req.Region}, req.DryRun)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, forgetAnswer{What: rep.What, Entries: len(rep.Entries), Forms: rep.Forms(), Erased: rep.Erased,
		Files: rep.Files, Pending: len(rep.Pending), DryRun: req.DryRun, JournalKept: rep.JournalKept, Drafts: rep.Drafts})
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

// linkTTL reads an export's link validity: a Go duration or a number of
// days ("7d"), from a minute to the seven days --link-ttl allows.
func linkTTL(v string) (time.Duration, bool) {
	var d time.Duration
	if n, err := strconv.Atoi(strings.TrimSuffix(v, "d")); err == nil && strings.HasSuffix(v, "d") {
		d = time.Duration(n) * 24 * time.Hour
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, false
	}
	return d, d >= time.Minute && d <= 7*24*time.Hour
}

// requestBase is the address the request came to, for links when the
// server has no --public-url.
func requestBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
