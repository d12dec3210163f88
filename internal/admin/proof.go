package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/store"
)

// Proof is what the proof page shows of a form: its numbers, the
// journal's backlog, its dead letters, and the arrival rate devices
// report.
type Proof struct {
	Stats FormStats
	// Journal is what the journal holds of the form (JournalKnown false
	// when it cannot count); Backlog is the whole journal's.
	Journal      journal.FormCount
	JournalKnown bool
	Backlog      journal.Stats
	DeadLetters  []store.DeadLetter
	// Arrivals are by hour over [Since, Until); Unreceived the keys
	// devices pressed that the store has no entry for, each marked when
	// the journal has it (received, being processed: not lost).
	Since, Until time.Time
	Arrivals     []store.ArrivalHour
	Unreceived   []Unreceived
	// Places are the options with places of their own, each counted
	// entry by entry beside its counter and capacity (none for a form
	// without them).
	Places []PlaceRow
	// Refused counts the arrival reports refused in the window (an origin
	// the form does not list, a key unlike the SDK's, a key the store has
	// no entry for from a client without an Origin, over a budget).
	Refused int64
}

// PlaceRow is one option's count on the proof page, with its label.
type PlaceRow struct {
	store.PlaceCount
	Label form.Text
}

// Unreceived is a key started on a device that has no entry.
type Unreceived struct {
	store.Arrival
	InJournal bool
}

// ArrivalRate is the share of keys pressed on devices that reached the
// server, over the proof's window; ok false when none were reported.
func (p Proof) ArrivalRate() (rate float64, started, reached int64, ok bool) {
	for _, a := range p.Arrivals {
		started += a.Started
		reached += a.Reached
	}
	for _, u := range p.Unreceived {
		if u.InJournal {
			reached++
		}
	}
	if started == 0 {
		return 0, 0, 0, false
	}
	return float64(reached) / float64(started), started, reached, true
}

// ProofWindow is the arrival window's default: the last 48 hours.
const ProofWindow = 48 * time.Hour

// maxUnreceived bounds the keys listed.
const maxUnreceived = 50

// ProofOf reads a form's proof; arrivals over [since, until).
func (h *Handler) ProofOf(ctx context.Context, f *form.Form, since, until time.Time) (Proof, error) {
	p := Proof{Since: since, Until: until}
	var err error
	if p.Stats, err = h.Stats(ctx, f); err != nil {
		return p, err
	}
	if h.Counter != nil {
		if p.Journal, err = h.Counter.CountForm(ctx, f.ID()); err != nil {
			return p, err
		}
		p.JournalKnown = true
	}
	if p.Backlog, err = h.Journal.Stats(ctx); err != nil {
		return p, err
	}
	counts, err := h.Store.CountPlaces(ctx, f.ID())
	if err != nil {
		return p, err
	}
	labels := map[string]form.Text{}
	if field, _ := f.PlaceField(); field != "" {
		for _, fd := range f.Def.Fields {
			if fd.Name == field {
				for _, o := range fd.Options {
					labels[o.Value] = o.Label
				}
			}
		}
	}
	for _, c := range counts {
		p.Places = append(p.Places, PlaceRow{PlaceCount: c, Label: labels[c.Value]})
	}
	dls, err := h.Store.DeadLetters(ctx, 1000)
	if err != nil {
		return p, err
	}
	for _, d := range dls {
		if d.Form == f.ID() {
			p.DeadLetters = append(p.DeadLetters, d)
		}
	}
	if p.Arrivals, err = h.Store.ArrivalStats(ctx, f.ID(), since, until); err != nil {
		return p, err
	}
	if p.Refused, err = h.Store.ArrivalsRefused(ctx, f.ID(), since, until); err != nil {
		return p, err
	}
	lost, err := h.Store.UnreceivedArrivals(ctx, f.ID(), since, until, maxUnreceived)
	if err != nil {
		return p, err
	}
	for _, a := range lost {
		_, in, err := h.Journal.Lookup(ctx, f.ID(), a.Key)
		if err != nil {
			return p, err
		}
		p.Unreceived = append(p.Unreceived, Unreceived{Arrival: a, InJournal: in})
	}
	return p, nil
}

func (h *Handler) proof(w http.ResponseWriter, r *http.Request, c call) error {
	until := h.Now().UTC()
	since := until.Add(-ProofWindow)
	if r.URL.Query().Get("since") != "" || r.URL.Query().Get("until") != "" {
		var err error
		if since, until, err = parseWindow(r); err != nil {
			return err
		}
	}
	p, err := h.ProofOf(r.Context(), c.form, since, until)
	if err != nil {
		return err
	}
	type hour struct {
		Hour     time.Time `json:"hour"`
		Started  int64     `json:"started"`
		Reached  int64     `json:"reached"`
		Received int64     `json:"received"`
		Stored   int64     `json:"stored"`
	}
	type unreceived struct {
		Key       string     `json:"key"`
		StartedAt *time.Time `json:"started_at"`
		InJournal bool       `json:"in_journal"`
	}
	hours := make([]hour, len(p.Arrivals))
	for i, a := range p.Arrivals {
		hours[i] = hour{a.Hour, a.Started, a.Reached, a.Received, a.Stored}
	}
	lost := make([]unreceived, len(p.Unreceived))
	for i, u := range p.Unreceived {
		lost[i] = unreceived{Key: u.Key, InJournal: u.InJournal}
		if !u.StartedAt.IsZero() {
			t := u.StartedAt.UTC()
			lost[i].StartedAt = &t
		}
	}
	out := map[string]any{"form": statsOut(p.Stats), "backlog": p.Backlog.Backlog, "dead_letters": nonNilDL(p.DeadLetters),
		"since": p.Since, "until": p.Until, "arrivals": hours, "unreceived": lost, "journal": nil, "arrival_rate": nil,
		"arrivals_refused": p.Refused}
	if !p.Backlog.OldestPending.IsZero() {
		out["oldest_pending"] = p.Backlog.OldestPending.UTC()
	}
	if p.JournalKnown {
		out["journal"] = map[string]int64{"entries": p.Journal.Entries, "pending": p.Journal.Pending}
	}
	if rate, _, _, ok := p.ArrivalRate(); ok {
		out["arrival_rate"] = rate
	}
	return writeJSON(w, http.StatusOK, out)
}

func nonNilDL(d []store.DeadLetter) []store.DeadLetter {
	if d == nil {
		return []store.DeadLetter{}
	}
	return d
}

// Job is an audit or a replay running in the background of this
// instance, with its progress. Jobs are kept in memory by the instance
// that runs them (the last 50).
type Job struct {
	ID        string
	Kind      string // audit | replay
	DryRun    bool
	RetryDead bool
	Filter    journal.Filter
	By        string
	Started   time.Time
	Finished  time.Time // zero while running
	Replay    replay.Report
	Audit     replay.AuditReport
	Err       string
	site      string // "" for a job of every site
	// account is whose job it is: the account, whether through a
	// session or any of its tokens; who it says By without one.
	account string
}

// Running says the job has not finished.
func (j Job) Running() bool { return j.Finished.IsZero() }

// jobs are the audits and replays of the instance. They run on ctx, which
// StopJobs cancels at shutdown, and wg counts them so that it can wait.
type jobs struct {
	mu     sync.Mutex
	list   []*Job
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

const keepJobs = 50

// scope checks that p may do action on the window's form or site, and
// returns its site ("" for every site).
func (h *Handler) scope(p accounts.Principal, f journal.Filter, action accounts.Action) (string, error) {
	switch {
	case f.Form != "":
		fm, err := h.Authorize(p, f.Form, action)
		if err != nil {
			return "", err
		}
		if f.Site != "" && f.Site != fm.Def.Site {
			return "", problem.New(problem.CodeInvalidRequest, "the form is not on that site")
		}
		return fm.Def.Site, nil
	case f.Site != "":
		if !p.Can(action, f.Site) {
			return "", accounts.ErrForbidden
		}
		return f.Site, nil
	case !p.Can(action, ""):
		return "", accounts.ErrForbidden
	}
	return "", nil
}

// StartAudit starts an audit of a window in the background.
func (h *Handler) StartAudit(p accounts.Principal, f journal.Filter) (Job, error) {
	site, err := h.scope(p, f, accounts.Read)
	if err != nil {
		return Job{}, err
	}
	j, err := h.newJob(p, "audit", f, site)
	if err != nil {
		return Job{}, err
	}
	h.jobs.wg.Go(func() {
		rep, err := replay.Audit(h.jobs.ctx, h.Journal, h.Store, f, func(r replay.AuditReport) {
			h.updateJob(j.ID, func(j *Job) { j.Audit = r })
		})
		h.finishJob(j.ID, err, func(j *Job) { j.Audit = rep })
	})
	return j, nil
}

// StartReplay starts a replay (or its dry run) of a window in the
// background, recorded in the audit log.
func (h *Handler) StartReplay(ctx context.Context, p accounts.Principal, f journal.Filter, dryRun, retryDead bool) (Job, error) {
	site, err := h.scope(p, f, accounts.Act)
	if err != nil {
		return Job{}, err
	}
	if h.NewProcessor == nil && !dryRun {
		return Job{}, problem.New(problem.CodeInternal, "this server cannot replay")
	}
	j, err := h.newJob(p, "replay", f, site)
	if err != nil {
		return Job{}, err
	}
	j.DryRun, j.RetryDead = dryRun, retryDead
	h.updateJob(j.ID, func(x *Job) { x.DryRun, x.RetryDead = dryRun, retryDead })
	action := "replay.run"
	if dryRun {
		action = "replay.dry-run"
	}
	var fm *form.Form
	if f.Form != "" {
		fm = h.Forms.Get(f.Form)
	}
	if err := h.audit(ctx, call{p: p, form: fm}, action, windowString(f), "job="+j.ID); err != nil {
		return Job{}, err
	}
	h.jobs.wg.Go(func() {
		rep, err := replay.Run(h.jobs.ctx, h.Journal, h.Store, h.NewProcessor, replay.Options{
			Filter: f, DryRun: dryRun, RetryDead: retryDead,
			Progress: func(r replay.Report) { h.updateJob(j.ID, func(j *Job) { j.Replay = r }) },
		})
		h.finishJob(j.ID, err, func(j *Job) { j.Replay = rep })
	})
	return j, nil
}

func windowString(f journal.Filter) string {
	s := "form=" + f.Form + " site=" + f.Site
	if !f.Since.IsZero() {
		s += " since=" + f.Since.UTC().Format(time.RFC3339)
	}
	if !f.Until.IsZero() {
		s += " until=" + f.Until.UTC().Format(time.RFC3339)
	}
	return s
}

// newJob records a job of p. An audit reads the whole window of the
// journal and the store, so each principal — a viewer as much as an
// editor or an owner — runs at most one audit at a time, of whichever
// form or site: a second is job-running (409) while the first runs
// (issue 30: a viewer could start one per form at once). Jobs live in
// the instance that runs them, so the rule is per instance, which bounds
// the work each instance takes on.
func (h *Handler) newJob(p accounts.Principal, kind string, f journal.Filter, site string) (Job, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	j := &Job{ID: "job_" + hex.EncodeToString(b), Kind: kind, Filter: f, By: p.String(), Started: h.Now(), site: site, account: p.AccountID}
	if j.account == "" {
		j.account = "by " + j.By
	}
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	if kind == "audit" {
		for _, old := range h.jobs.list {
			if old.Kind == kind && old.Running() && old.account == j.account {
				return Job{}, problem.New(problem.CodeJobRunning, "an audit by you is running already: "+old.ID)
			}
		}
	}
	h.jobs.list = append(h.jobs.list, j)
	if len(h.jobs.list) > keepJobs {
		for i, old := range h.jobs.list {
			if !old.Running() {
				h.jobs.list = slices.Delete(h.jobs.list, i, i+1)
				break
			}
		}
	}
	return *j, nil
}

func (h *Handler) updateJob(id string, fn func(*Job)) {
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	for _, j := range h.jobs.list {
		if j.ID == id {
			fn(j)
		}
	}
}

func (h *Handler) finishJob(id string, err error, fn func(*Job)) {
	h.updateJob(id, func(j *Job) {
		fn(j)
		j.Finished = h.Now()
		if err != nil {
			j.Err = err.Error()
		}
	})
}

// JobOf reads a job the principal may see.
func (h *Handler) JobOf(p accounts.Principal, id string) (Job, error) {
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	for _, j := range h.jobs.list {
		if j.ID == id && p.Can(accounts.Read, j.site) {
			return *j, nil
		}
	}
	return Job{}, problem.New(problem.CodeNotFound, "no such job on this instance (jobs are kept by the instance that runs them)")
}

// Jobs lists the jobs the principal may see of a form ("" for every),
// newest first.
func (h *Handler) Jobs(p accounts.Principal, formID string) []Job {
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	var out []Job
	for i := len(h.jobs.list) - 1; i >= 0; i-- {
		j := h.jobs.list[i]
		if p.Can(accounts.Read, j.site) && (formID == "" || j.Filter.Form == formID) {
			out = append(out, *j)
		}
	}
	return out
}

// WaitJobs waits for every job to finish (tests).
func (h *Handler) WaitJobs() { h.jobs.wg.Wait() }

// StopJobs cancels the jobs still running and waits until they have
// stopped: the shutdown's, before the drivers close under them. A stopped
// job is finished with the cancellation as its error; start it again on
// an instance that runs.
func (h *Handler) StopJobs() {
	h.jobs.cancel()
	h.jobs.wg.Wait()
}

// windowRequest is the body of POST /v1/admin/audit and /replay.
type windowRequest struct {
	Form      string `json:"form"`
	Site      string `json:"site"`
	Since     string `json:"since"`
	Until     string `json:"until"`
	DryRun    bool   `json:"dry_run"`
	RetryDead bool   `json:"retry_dead"`
}

func (w windowRequest) filter() (journal.Filter, error) {
	since, until, err := replay.ParseWindow(w.Since, w.Until)
	if err != nil {
		return journal.Filter{}, problem.New(problem.CodeInvalidRequest, err.Error())
	}
	return journal.Filter{Form: w.Form, Site: w.Site, Since: since, Until: until}, nil
}

func (h *Handler) startAudit(w http.ResponseWriter, r *http.Request, c call) error {
	var req windowRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"form": "…"} or {"site": "…"}, with "since" and "until" if you like`)
	}
	f, err := req.filter()
	if err != nil {
		return err
	}
	j, err := h.StartAudit(c.p, f)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/admin/jobs/"+j.ID)
	return writeJSON(w, http.StatusAccepted, jobOut(j))
}

func (h *Handler) startReplay(w http.ResponseWriter, r *http.Request, c call) error {
	var req windowRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return problem.New(problem.CodeInvalidRequest, `send {"form": "…", "dry_run": true} or {"site": "…"}, with "since" and "until" if you like`)
	}
	f, err := req.filter()
	if err != nil {
		return err
	}
	j, err := h.StartReplay(r.Context(), c.p, f, req.DryRun, req.RetryDead)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/admin/jobs/"+j.ID)
	return writeJSON(w, http.StatusAccepted, jobOut(j))
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request, c call) error {
	j, err := h.JobOf(c.p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, jobOut(j))
}

// JobView is a job as the admin API shows it (GET /v1/admin/jobs/{id}).
func JobView(j Job) map[string]any { return jobOut(j) }

func jobOut(j Job) map[string]any {
	out := map[string]any{"id": j.ID, "kind": j.Kind, "form": j.Filter.Form, "site": j.Filter.Site, "by": j.By,
		"started_at": j.Started.UTC(), "running": j.Running(), "error": nil}
	if !j.Finished.IsZero() {
		out["finished_at"] = j.Finished.UTC()
	}
	if j.Err != "" {
		out["error"] = j.Err
	}
	switch j.Kind {
	case "replay":
		out["dry_run"] = j.DryRun
		out["read"] = j.Replay.Read
		out["counts"] = nonNilCounts(j.Replay.Counts)
	case "audit":
		a := j.Audit
		refs := make([]map[string]any, len(a.WithoutEvent))
		for i, e := range a.WithoutEvent {
			refs[i] = map[string]any{"form": e.Form, "id": e.ID, "seq": e.Seq}
		}
		out["journaled"], out["decided"], out["missing"] = a.Journaled, a.Decided, a.Missing
		out["statuses"] = nonNilCounts(a.Statuses)
		out["without_event"] = refs
		out["ok"] = a.OK()
	}
	return out
}

func nonNilCounts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}
