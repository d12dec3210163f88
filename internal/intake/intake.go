// Package intake is formd's public HTTP API: it validates a
// submission, fingerprints it, appends it to the durable journal before any
// store call, and answers only then — with the outcome when the processor
// decides within the wait, or 202 when it does not. The same key always
// gets the same answer, and overload is answered with 429/503 and
// Retry-After, never by dropping a submission silently.
package intake

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/formd/formd/internal/problem"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/google/uuid"
)

// Journal is the part of the journal intake writes to and reads from.
type Journal interface {
	Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error)
	Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error)
}

// Outcomes is the part of the store intake reads.
type Outcomes interface {
	Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error)
}

// Places says how many places a form has taken (store.PlacesCache).
type Places interface {
	Places(ctx context.Context, form string) (store.Capacity, bool)
}

// Forms finds a form by id.
type Forms interface {
	Get(id string) *form.Form
}

// Waiter delivers the outcome of a (form, key) once the processor decides
// it (processor.Notifier).
type Waiter interface {
	Wait(form, key string) (<-chan store.Outcome, func())
}

// Pages renders the HTML answer to a plain form post whose values need a
// fix: the form again, with what was typed and the errors (package
// hosted).
type Pages interface {
	FormErrors(w http.ResponseWriter, r *http.Request, f *form.Form, values map[string]any, key string, errs []form.FieldError)
}

// Config tunes the intake. Zero values take the defaults.
type Config struct {
	// DefaultWait is how long a POST waits for its outcome when the client
	// states no preference.
	DefaultWait time.Duration
	// MaxWait caps Prefer: wait=N.
	MaxWait time.Duration
	// MaxBody is the body size limit in bytes.
	MaxBody int64
	// RateLimit is the default per-client-IP, per-form limit; a form's own
	// rate_limit overrides it.
	RateLimit form.RateLimit
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client. Without them the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// Instance is this instance's id: a journaled entry whose request
	// waits for its outcome names it (journal.Entry.Waiter), so that the
	// instance deciding it announces the outcome here. Empty with one
	// instance.
	Instance string
	// Pages, if set, answers plain HTML posts that fail validation.
	Pages Pages
	// Places, if set, lets the public definition say whether places remain.
	Places Places
	// Arrivals, if set, keeps the SDK's arrival reports.
	Arrivals Arrivals
	// Uploads, if set, takes plain HTML posts' files (package uploads);
	// without it no upload reference is valid. The uploads a submission
	// names are checked by its decision.
	Uploads Uploads
	// Hasher keys fingerprints, claims and request digests with the
	// installation's secret. Required.
	Hasher *form.Hasher
	// Refusals, if set, counts the submissions turned away before
	// anything was kept (a closed form, values to fix), for the console.
	Refusals *RefusalTally
	// Participants, if set, serves the participant's link
	// (participant.go); without it GET /v1/entries/{token} is 404.
	Participants ParticipantStore
	// Erase, if set, erases a participant's entry at once when the form
	// has self_erase (erasure.ForgetEntries); Audit, if set, records
	// participants' erasure requests in the audit log.
	Erase Eraser
	Audit Auditor
	// Drafts, if set, keeps the drafts of forms with drafts: true
	// (drafts.go); without it their routes answer drafts-disabled.
	Drafts DraftStore
	// DraftMail, if set, e-mails a draft's resume link when the person
	// asks (draftmail.go), bounded by DraftBudgets; PublicURL makes the
	// link absolute.
	DraftMail    DraftMailer
	DraftBudgets DraftBudgets
	PublicURL    string
	// Proof checks the proof-of-work of forms that ask for it
	// (challenge.go).
	Proof   Proof
	Now     func() time.Time
	NewID   func() string
	Logger  *slog.Logger
	Metrics *Metrics
}

// setDefaults fills the parts that are not settings; the tunables come
// from the configuration (package config), their one source of defaults.
func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
}

// Handler serves the public API.
type Handler struct {
	cfg      Config
	journal  Journal
	outcomes Outcomes
	forms    Forms
	waiter   Waiter
	limiter  *limiter
	statuses Statuses
	// arrivalRefusals tallies arrival reports refused before the store, until
	// they are written (arrivals.go).
	arrivalRefusals *refusalTally
}

// New makes the handler.
func New(j Journal, o Outcomes, forms Forms, w Waiter, cfg Config) *Handler {
	cfg.setDefaults()
	return &Handler{cfg: cfg, journal: j, outcomes: o, forms: forms, waiter: w, limiter: newLimiter(maxBuckets), statuses: NewStatuses(j, o),
		arrivalRefusals: newRefusalTally()}
}

// Register adds the public routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle("POST /v1/forms/{form}/submissions", h.wrap("submit", h.submit))
	mux.Handle("OPTIONS /v1/forms/{form}/submissions", h.wrap("preflight", h.preflight))
	mux.Handle("GET /v1/forms/{form}/submissions/{key}", h.wrap("status", h.status))
	mux.Handle("OPTIONS /v1/forms/{form}/submissions/{key}", h.wrap("preflight", h.preflight))
	mux.Handle("POST /v1/forms/{form}/arrivals", h.wrap("arrivals", h.arrivals))
	mux.Handle("OPTIONS /v1/forms/{form}/arrivals", h.wrap("preflight", h.preflight))
	mux.Handle("GET /v1/forms/{form}", h.wrap("form", h.publicForm))
	mux.Handle("OPTIONS /v1/forms/{form}", h.wrap("preflight", h.preflight))
	mux.Handle("GET /problems/{code}", h.wrap("problems", problem.Docs))
	h.registerChallenge(mux)
	h.registerDrafts(mux)
	h.registerParticipant(mux)
}

// wrap turns a handler that returns an error into an http.Handler that
// answers the error as problem+json, and measures it.
func (h *Handler) wrap(route string, fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := h.cfg.Now()
		rec := &statusRecorder{ResponseWriter: w}
		if err := fn(rec, r); err != nil {
			if isHTMLPost(r) && route == "submit" {
				p := problem.From(err)
				problem.Log(h.cfg.Logger, r, err, p)
				writeHTMLProblem(rec, r, p)
			} else {
				problem.Write(rec, r, h.cfg.Logger, err)
			}
		}
		h.cfg.Metrics.observe(route, rec.status, rec.code, h.cfg.Now().Sub(start))
	})
}

// submit is POST /v1/forms/{form}/submissions.
//
// A retry is answered before anything that may have changed since its
// first send: a key already journaled gets that submission's outcome (200
// replayed, or 202 while it is processed) even if the form has closed or been
// edited since, or the client's rate limit is spent. Only a new key meets
// the open window, the rate limit and validation. The key is looked up
// only when one of those refuses, so a new submission pays for no lookup;
// the journal's unique (form, key) catches every other retry at append.
func (h *Handler) submit(w http.ResponseWriter, r *http.Request) error {
	now := h.cfg.Now()
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	pref := parsePrefer(r.Header.Values("Prefer"))
	files := h.filesFor(r.Context(), f)
	var sink fileSink
	if files != nil {
		sink = files // a nil *postedFiles is not a nil fileSink
	}
	b, err := decodeBodyWith(r, h.cfg.MaxBody, sink)
	if err != nil {
		return err
	}
	solution := takeChallenge(f, &b)
	key, derived, err := pickKey(r, b, f)
	if err != nil {
		return err
	}
	digest := h.cfg.Hasher.Digest(f.ID(), b.values)
	var refusal error
	var refund func()
	if !f.OpenAt(now) {
		refusal = closedProblem(f, now)
	} else {
		refund, refusal = h.rateLimit(r, f, now)
	}
	var acc *form.Accepted
	if refusal == nil {
		acc, refusal = f.Validate(b.values, h.cfg.Hasher)
	}
	var uploads []journal.Upload
	if refusal == nil {
		uploads, refusal = h.uploadChecks(acc.Uploads, files)
	}
	var spam string
	var solved *journal.Challenge
	if refusal == nil && f.Def.Spam.NeedsChallenge() {
		spam, solved, refusal = h.checkChallenge(f, solution, now)
	}
	if spam == "" {
		spam = spamReason(f, b, now)
	}
	if refusal != nil {
		return h.refused(w, r, f, b, key, derived, digest, pref, refusal)
	}
	if derived {
		key = derivedKey(acc.Fingerprint)
	}
	e := journal.Entry{
		ID:          h.cfg.NewID(),
		Site:        f.Def.Site,
		Form:        f.ID(),
		Key:         key,
		Fingerprint: acc.Fingerprint,
		Digest:      digest,
		ReceivedAt:  now,
		Spam:        spam != "",
		SpamReason:  spam,
		Challenge:   solved,
		Uploads:     uploads,
		Claims:      acc.Claims,
		Data:        acc.Data,
	}
	w.Header().Set("Idempotency-Key", key)
	if derived {
		w.Header().Set("Formd-Key-Derived", "true")
	}
	if f.Def.Durability == form.DurabilityAsync {
		// Async forms trade durability for latency: answer once queued.
		a, err := h.journal.Append(r.Context(), e, false)
		if err != nil {
			return err
		}
		if a.Duplicate {
			refund()
			return h.retry(w, r, f, a.Entry, digest, acc, pref)
		}
		return h.accepted(w, r, f, e, "respond-async")
	}
	// Register before appending, so the outcome cannot slip past unseen.
	outcome, stop := h.waiter.Wait(e.Form, e.Key)
	defer stop()
	if !pref.async {
		e.Waiter = h.cfg.Instance
	}
	a, err := h.journal.Append(r.Context(), e, true)
	if err != nil {
		return err
	}
	if a.Duplicate {
		// A retry is not a new submission: it does not count against the
		// client's rate limit.
		refund()
		return h.retry(w, r, f, a.Entry, digest, acc, pref)
	}
	return h.finish(w, r, f, e, outcome, pref, false)
}

// derivedKey is the key of a submission sent without one: its content's
// keyed fingerprint, so identical content is one submission.
func derivedKey(fp [32]byte) string { return "fp-" + hex.EncodeToString(fp[:16]) }

// refused answers a request that the open window, the rate limit or
// validation refused — unless its key was journaled by an earlier send,
// which then gets that submission's answer.
func (h *Handler) refused(w http.ResponseWriter, r *http.Request, f *form.Form, b body, key string, derived bool, digest [32]byte, pref preference, refusal error) error {
	var acc *form.Accepted
	if derived {
		// The key is the content's: only content that validates has one.
		var err error
		if acc, err = f.Validate(b.values, h.cfg.Hasher); err == nil {
			key = derivedKey(acc.Fingerprint)
		} else {
			key = ""
		}
	}
	if key != "" {
		e, found, err := h.earlier(r.Context(), f.ID(), key)
		if err != nil {
			// Refusing could tell the client its journaled submission
			// failed: have it ask again instead.
			return err
		}
		if found {
			if derived {
				w.Header().Set("Idempotency-Key", key)
				w.Header().Set("Formd-Key-Derived", "true")
			}
			return h.retry(w, r, f, e, digest, acc, pref)
		}
	}
	h.cfg.Refusals.Note(f.ID(), refusal)
	var ve *form.ValidationError
	if h.cfg.Pages != nil && isHTMLPost(r) && errors.As(refusal, &ve) {
		problem.NoteCode(w, problem.CodeValidationFailed)
		h.cfg.Pages.FormErrors(w, r, f, b.values, b.key, ve.Errors)
		return nil
	}
	return refusal
}

// earlier finds what an earlier send of (form, key) left: the journal's
// entry or, once retention has pruned that, the store's outcome (as an
// entry with its id, time and fingerprint).
func (h *Handler) earlier(ctx context.Context, formID, key string) (journal.Entry, bool, error) {
	e, found, err := h.journal.Lookup(ctx, formID, key)
	if err != nil {
		return e, false, fmt.Errorf("look up %s/%s in the journal: %w", formID, key, err)
	}
	if found {
		return e, true, nil
	}
	o, found, err := h.outcomes.Outcome(ctx, formID, key)
	if err != nil {
		return e, false, fmt.Errorf("look up %s/%s in the store: %w", formID, key, err)
	}
	if !found {
		return e, false, nil
	}
	return journal.Entry{ID: o.ID, Form: o.Form, Key: o.Key, Fingerprint: o.Fingerprint, ReceivedAt: o.ReceivedAt}, true, nil
}

// retry answers a request for a key journaled earlier (entry e): the
// first outcome once decided, else a wait for it like a first send. The
// request is the same submission when its values as sent match the first
// send's (digest), or when its normalized content does (acc, when it
// validated: the fingerprint, or for entries journaled before digests and
// keyed fingerprints, the digest their upgrade recorded from their data).
func (h *Handler) retry(w http.ResponseWriter, r *http.Request, f *form.Form, e journal.Entry, digest [32]byte, acc *form.Accepted, pref preference) error {
	sameRequest := e.Digest != ([32]byte{}) && e.Digest == digest
	sameContent := acc != nil && acc.Fingerprint == e.Fingerprint
	if !sameRequest && !sameContent && acc != nil && e.Digest != ([32]byte{}) {
		d, ok := h.cfg.Hasher.DataDigest(f.ID(), acc.Data)
		sameContent = ok && d == e.Digest
	}
	if !sameRequest && !sameContent {
		return problem.New(problem.CodeKeyReused, "this key was used for a submission with different content; use a new key for new content")
	}
	outcome, stop := h.waiter.Wait(e.Form, e.Key)
	defer stop()
	if o, ok, err := h.outcomes.Outcome(r.Context(), e.Form, e.Key); err == nil && ok {
		return h.respond(w, r, f, o, true, form.IgnoredOf(e.Data))
	}
	if f.Def.Durability == form.DurabilityAsync && !pref.hasWait {
		return h.accepted(w, r, f, e, "respond-async")
	}
	return h.finish(w, r, f, e, outcome, pref, true)
}

// finish answers a journaled, undecided entry: 202 at once when the
// client asked for it, else the outcome if it comes within the wait.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, f *form.Form, e journal.Entry, outcome <-chan store.Outcome, pref preference, replayed bool) error {
	applied, wait := "", h.cfg.DefaultWait
	switch {
	case pref.async:
		return h.accepted(w, r, f, e, "respond-async")
	case pref.hasWait:
		wait = min(pref.wait, h.cfg.MaxWait)
		applied = "wait=" + strconv.Itoa(int(wait/time.Second))
	}
	if applied != "" {
		w.Header().Set("Preference-Applied", applied)
	}
	o, ok := h.await(r.Context(), outcome, wait)
	if !ok {
		return h.accepted(w, r, f, e, "")
	}
	return h.respond(w, r, f, o, replayed || o.Replayed, form.IgnoredOf(e.Data))
}

// await waits for the outcome until the wait ends or the client
// leaves. The outcome comes through the waiter: decided here, announced by
// the instance that decided it, or found by the instance's one poll of
// the store for all its waiting requests (processor.Notifier.Poll).
func (h *Handler) await(ctx context.Context, outcome <-chan store.Outcome, wait time.Duration) (store.Outcome, bool) {
	if wait <= 0 {
		return store.Outcome{}, false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case o := <-outcome:
		return o, true
	case <-timer.C:
		return store.Outcome{}, false
	case <-ctx.Done():
		return store.Outcome{}, false
	}
}

// respond answers with a decided outcome; replayed answers carry the first
// body byte-for-byte, with 200 instead of 201. ignored are the fields the
// journaled submission sent a value for and did not keep (form.IgnoredOf
// its data, which never changes), listed in a status document.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request, f *form.Form, o store.Outcome, replayed bool, ignored []string) error {
	a := firstAnswer(o)
	if a.problem == nil {
		a.body = withIgnored(h.withManage(a.body, o), ignored)
	}
	replayed = replayed || a.replay
	if isHTMLPost(r) {
		redirectHTML(w, r, f, o.Key, h.linkToken(o.Form, o.ID), a.problem == nil && a.status == http.StatusCreated)
		return nil
	}
	if a.problem != nil {
		problem.WriteDoc(w, a.problem, a.body, replayed)
		return nil
	}
	hdr := w.Header()
	hdr.Set("Location", statusURL(o.Form, o.Key))
	status := a.status
	if replayed {
		hdr.Set("Idempotent-Replayed", "true")
		if status == http.StatusCreated {
			status = http.StatusOK
		}
	}
	if status == http.StatusAccepted {
		hdr.Set("Retry-After", "1")
	}
	writeJSON(w, status, a.body)
	return nil
}

// accepted answers 202: journaled, not decided yet.
func (h *Handler) accepted(w http.ResponseWriter, r *http.Request, f *form.Form, e journal.Entry, applied string) error {
	if applied != "" {
		w.Header().Set("Preference-Applied", applied)
	}
	if isHTMLPost(r) {
		redirectHTML(w, r, f, e.Key, h.linkToken(e.Form, e.ID), false)
		return nil
	}
	w.Header().Set("Location", statusURL(e.Form, e.Key))
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusAccepted, withIgnored(statusDoc(e.ID, e.Form, e.Key, statusProcessing, e.ReceivedAt, e.Fingerprint), form.IgnoredOf(e.Data)))
	return nil
}

// status is GET /v1/forms/{form}/submissions/{key}: status and id only,
// never the data.
func (h *Handler) status(w http.ResponseWriter, r *http.Request) error {
	f := h.forms.Get(r.PathValue("form"))
	if f == nil {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if err := h.checkOrigin(w, r, f); err != nil {
		return err
	}
	key := r.PathValue("key")
	if !validKey(key) {
		return problem.New(problem.CodeSubmissionNotFound, "")
	}
	w.Header().Set("Cache-Control", "no-store")
	doc, found, err := h.statuses.lookup(r.Context(), f.ID(), key)
	if err != nil {
		return err
	}
	if !found {
		return problem.New(problem.CodeSubmissionNotFound, "")
	}
	if doc.status == statusProcessing {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, http.StatusOK, doc.body)
	return nil
}

// pickKey finds the idempotency key: the header, else the _key field, else
// (unless the form requires one) a key derived from the fingerprint.
func pickKey(r *http.Request, b body, f *form.Form) (key string, derived bool, err error) {
	if hv := r.Header.Values("Idempotency-Key"); len(hv) > 0 {
		if len(hv) > 1 {
			return "", false, problem.New(problem.CodeInvalidRequest, "send one Idempotency-Key header")
		}
		k, err := parseKey(hv[0])
		return k, false, err
	}
	if b.key != "" {
		if !validKey(b.key) {
			return "", false, errBadKey
		}
		return b.key, false, nil
	}
	if f.Def.RequireKey {
		return "", false, problem.New(problem.CodeKeyMissing, "send an Idempotency-Key header (or a _key field) with every submission to this form")
	}
	return "", true, nil
}

func closedProblem(f *form.Form, now time.Time) *problem.Problem {
	if f.Def.OpensAt != nil && now.Before(*f.Def.OpensAt) {
		return problem.New(problem.CodeFormClosed, "the form opens at "+f.Def.OpensAt.Format(time.RFC3339))
	}
	return problem.New(problem.CodeFormClosed, "the form has closed")
}

// rateLimit takes a token from the client's bucket for this form. The
// returned function gives it back, for a request that turns out to be a
// retry: only new submissions count.
func (h *Handler) rateLimit(r *http.Request, f *form.Form, now time.Time) (refund func(), err error) {
	return h.rateLimitScaled(r, f, now, "", 1)
}

// rateLimitScaled is rateLimit on a bucket of its own (suffix) at scale
// times the form's rate and burst.
func (h *Handler) rateLimitScaled(r *http.Request, f *form.Form, now time.Time, suffix string, scale int) (refund func(), err error) {
	rl := h.cfg.RateLimit
	if f.Def.RateLimit != nil {
		rl = *f.Def.RateLimit
	}
	if rl.Off || rl.Requests <= 0 || rl.Per <= 0 {
		return func() {}, nil
	}
	burst := rl.Burst
	if burst <= 0 {
		burst = rl.Requests
	}
	burst *= scale
	perSecond := float64(rl.Requests*scale) / time.Duration(rl.Per).Seconds()
	key := h.clientKey(r) + "|" + f.ID() + suffix
	ok, wait := h.limiter.allow(key, now, perSecond, burst)
	if ok {
		return func() { h.limiter.refund(key, burst) }, nil
	}
	p := problem.New(problem.CodeRateLimited, "too many requests from this client to this form")
	p.RetryAfter = max(1, int((wait+time.Second-1)/time.Second))
	return func() {}, p
}

// clientIP is the TCP peer, or, behind a trusted proxy, the nearest
// untrusted address in X-Forwarded-For.
func (h *Handler) clientIP(r *http.Request) string {
	return ClientIP(r, h.cfg.TrustedProxies)
}

// ClientIP is the address a request came from: the TCP peer, or, when the
// peer is one of the trusted proxies, the nearest untrusted address in
// X-Forwarded-For. The console's sign-in limit counts by it too.
func ClientIP(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(trusted) == 0 {
		return host
	}
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !isTrusted(addr) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if !isTrusted(a) {
			return a.String()
		}
	}
	return host
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client may be gone; nothing to do
}

// statusRecorder remembers the status and problem code written, for the
// metrics.
type statusRecorder struct {
	http.ResponseWriter
	status int
	code   string
}

// NoteCode records the problem code of the response for the metrics.
func (s *statusRecorder) NoteCode(code string) { s.code = code }

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
