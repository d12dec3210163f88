package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// FormStats are a form's live numbers, as the forms page shows them.
type FormStats struct {
	Form *form.Form
	Open bool
	// Counts are the store's entries by status.
	Counts store.StatusCounts
	// Decided is every entry the store has decided; Processing those the
	// journal holds not yet acknowledged (ProcessingKnown false when the
	// journal cannot count a form's); Received is both.
	Decided, Processing, Received int64
	ProcessingKnown               bool
	// Capacity is the form's places (Limit nil: no limit).
	Capacity store.Capacity
	// Refused counts, by problem code, the submissions intake turned
	// away before keeping anything (form-closed, validation-failed): not
	// entries, so not in Received.
	Refused map[string]int64
	// Options are the places of the options of the form's place field
	// (sessions with places of their own), in the definition's order;
	// nil for a form without them.
	Options []OptionStats
}

// OptionStats is one option's places: how many entries hold one
// (stored), how many wait for one, and its limit (nil: none of its own).
type OptionStats struct {
	Value      string
	Label      form.Text
	Limit      *int
	Stored     int
	Waitlisted int
}

// Left is the option's places left, -1 for no limit of its own.
func (o OptionStats) Left() int {
	return store.Capacity{Limit: o.Limit, Taken: o.Stored}.Left()
}

// optionStats are f's option places from the store's counts; the limits
// are the definition's (the store's follow it).
func optionStats(f *form.Form, c store.Capacity) []OptionStats {
	field, places := f.PlaceField()
	if field == "" {
		return nil
	}
	labels := map[string]form.Text{}
	for _, fd := range f.Fields() {
		if fd.Name == field {
			for _, o := range fd.Options {
				labels[o.Value] = o.Label
			}
		}
	}
	out := make([]OptionStats, len(places))
	for i, o := range places {
		oc := c.Options[o.Value]
		out[i] = OptionStats{Value: o.Value, Label: labels[o.Value], Limit: o.Capacity, Stored: oc.Taken, Waitlisted: oc.Waitlisted}
	}
	return out
}

// RefusedFor is how many submissions intake refused for a reason.
func (s FormStats) RefusedFor(code string) int64 { return s.Refused[code] }

// Left is the places left, -1 for no limit.
func (s FormStats) Left() int { return s.Capacity.Left() }

// Count is the count of a status.
func (s FormStats) Count(status string) int64 { return s.Counts[status] }

// Stats reads a form's live numbers.
func (h *Handler) Stats(ctx context.Context, f *form.Form) (FormStats, error) {
	st := FormStats{Form: f, Open: f.OpenAt(h.Now())}
	var err error
	if st.Counts, err = h.Store.CountByStatus(ctx, f.ID()); err != nil {
		return st, err
	}
	for _, n := range st.Counts {
		st.Decided += n
	}
	if h.Counter != nil {
		c, err := h.Counter.CountForm(ctx, f.ID())
		if err != nil {
			return st, err
		}
		st.Processing, st.ProcessingKnown = c.Pending, true
	}
	st.Received = st.Decided + st.Processing
	caps, err := h.Store.Capacities(ctx)
	if err != nil {
		return st, err
	}
	st.Capacity = caps[f.ID()]
	st.Capacity.Limit = f.Def.Capacity
	st.Options = optionStats(f, st.Capacity)
	if h.Refusals != nil {
		if st.Refused, err = h.Refusals.RefusalsOf(ctx, f.ID()); err != nil {
			return st, err
		}
	}
	return st, nil
}

// Chart is entries per minute over a window, every minute present.
type Chart struct {
	Since, Until time.Time
	Minutes      []store.MinuteCount
	Peak         store.MinuteCount
	// Opening says the window is the hour from when the form opened.
	Opening bool
}

// ChartWindow is the chart's default window: the hour from five minutes
// before the form opened, when it opened within the last week (the peak
// of a registration); else the last hour.
func (h *Handler) ChartWindow(f *form.Form) (since, until time.Time, opening bool) {
	now := h.Now().UTC()
	if o := f.Def.OpensAt; o != nil && o.Before(now) && now.Sub(*o) < 7*24*time.Hour {
		since = o.UTC().Truncate(time.Minute).Add(-5 * time.Minute)
		return since, since.Add(time.Hour), true
	}
	until = now.Truncate(time.Minute).Add(time.Minute)
	return until.Add(-time.Hour), until, false
}

// Chart counts a form's entries per minute in [since, until), at most a
// day of minutes.
func (h *Handler) Chart(ctx context.Context, f *form.Form, since, until time.Time) (Chart, error) {
	since, until = since.UTC().Truncate(time.Minute), until.UTC()
	if until.Sub(since) > 24*time.Hour || !until.After(since) {
		return Chart{}, problem.New(problem.CodeInvalidRequest, "the chart's window is at most a day, since before until")
	}
	got, err := h.Store.EntriesPerMinute(ctx, f.ID(), since, until)
	if err != nil {
		return Chart{}, err
	}
	c := Chart{Since: since, Until: until}
	i := 0
	for m := since; m.Before(until); m = m.Add(time.Minute) {
		mc := store.MinuteCount{Minute: m}
		if i < len(got) && got[i].Minute.Equal(m) {
			mc.N = got[i].N
			i++
		}
		if mc.N > c.Peak.N {
			c.Peak = mc
		}
		c.Minutes = append(c.Minutes, mc)
	}
	return c, nil
}

// statsJSON is a form's numbers in the admin API.
type statsJSON struct {
	ID         string           `json:"id"`
	Site       string           `json:"site"`
	Title      form.Text        `json:"title,omitempty"`
	Open       bool             `json:"open"`
	OpensAt    *time.Time       `json:"opens_at,omitempty"`
	ClosesAt   *time.Time       `json:"closes_at,omitempty"`
	Counts     map[string]int64 `json:"counts"`
	Received   int64            `json:"received"`
	Processing *int64           `json:"processing"`
	Capacity   *int             `json:"capacity"`
	Taken      int              `json:"taken"`
	Left       *int             `json:"left"`
	Waitlisted int              `json:"waitlisted"`
	// Options are the places of the options with places of their own.
	Options []optionJSON `json:"options,omitempty"`
}

// optionJSON is one option's places in the admin API.
type optionJSON struct {
	Value      string `json:"value"`
	Capacity   *int   `json:"capacity"`
	Stored     int    `json:"stored"`
	Waitlisted int    `json:"waitlisted"`
	Left       *int   `json:"left"`
}

func statsOut(s FormStats) statsJSON {
	out := statsJSON{ID: s.Form.ID(), Site: s.Form.Def.Site, Title: s.Form.Def.Title, Open: s.Open, OpensAt: s.Form.Def.OpensAt,
		ClosesAt: s.Form.Def.ClosesAt, Counts: map[string]int64{}, Received: s.Received, Capacity: s.Capacity.Limit,
		Taken: s.Capacity.Taken, Waitlisted: int(s.Counts[store.StatusWaitlisted])}
	for _, st := range Statuses {
		out.Counts[st] = s.Counts[st]
	}
	if s.ProcessingKnown {
		out.Processing = &s.Processing
	}
	if s.Capacity.Limit != nil {
		left := s.Left()
		out.Left = &left
	}
	for _, o := range s.Options {
		oj := optionJSON{Value: o.Value, Capacity: o.Limit, Stored: o.Stored, Waitlisted: o.Waitlisted}
		if o.Limit != nil {
			left := o.Left()
			oj.Left = &left
		}
		out.Options = append(out.Options, oj)
	}
	return out
}

func (h *Handler) formStats(w http.ResponseWriter, r *http.Request, c call) error {
	s, err := h.Stats(r.Context(), c.form)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, statsOut(s))
}

func (h *Handler) formChart(w http.ResponseWriter, r *http.Request, c call) error {
	since, until, _ := h.ChartWindow(c.form)
	if v := r.URL.Query().Get("since"); v != "" || r.URL.Query().Get("until") != "" {
		s, u, err := parseWindow(r)
		if err != nil {
			return err
		}
		since, until = s, u
	}
	ch, err := h.Chart(r.Context(), c.form, since, until)
	if err != nil {
		return err
	}
	type minute struct {
		Minute time.Time `json:"minute"`
		N      int64     `json:"n"`
	}
	out := make([]minute, len(ch.Minutes))
	for i, m := range ch.Minutes {
		out[i] = minute{m.Minute, m.N}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"since": ch.Since, "until": ch.Until, "minutes": out,
		"peak": minute{ch.Peak.Minute, ch.Peak.N}})
}

// parseWindow reads ?since and ?until (RFC 3339), both required.
func parseWindow(r *http.Request) (time.Time, time.Time, error) {
	s, err1 := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
	u, err2 := time.Parse(time.RFC3339, r.URL.Query().Get("until"))
	if err := errors.Join(err1, err2); err != nil {
		return s, u, problem.New(problem.CodeInvalidRequest, "since and until must both be RFC 3339 times such as 2027-03-01T09:00:00+08:00")
	}
	return s, u, nil
}

// definition is GET …/definition: the form's stored YAML, as the owner
// wrote it.
func (h *Handler) definition(w http.ResponseWriter, _ *http.Request, c call) error {
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err := w.Write(DefinitionFor(c.p, c.form))
	return err
}

// DefinitionFor is a form's YAML as the principal may read it: with its
// webhook secrets for an owner of its site, with form.HiddenSecret in
// their place for anyone else (an editor may replace a secret, sending
// the placeholder back keeps it, but never reads it).
func DefinitionFor(p accounts.Principal, f *form.Form) []byte {
	if p.Can(accounts.ReadSecrets, f.Def.Site) {
		return f.Source()
	}
	return form.MaskSecrets(f.Source())
}

func (h *Handler) openForm(w http.ResponseWriter, r *http.Request, c call) error {
	return h.setOpenJSON(w, r, c, true)
}

func (h *Handler) closeForm(w http.ResponseWriter, r *http.Request, c call) error {
	return h.setOpenJSON(w, r, c, false)
}

func (h *Handler) setOpenJSON(w http.ResponseWriter, r *http.Request, c call, open bool) error {
	if err := h.SetOpen(r.Context(), c.p, c.form, open); err != nil {
		return err
	}
	f := h.Forms.Get(c.form.ID())
	return writeJSON(w, http.StatusOK, map[string]any{"id": f.ID(), "open": f.OpenAt(h.Now()), "opens_at": f.Def.OpensAt, "closes_at": f.Def.ClosesAt})
}

// decodeJSON reads a small JSON body.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Journal is the part of the journal the console reads: replay's and
// audit's window, one entry, the backlog.
type Journal interface {
	Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error
	Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error)
	Stats(ctx context.Context) (journal.Stats, error)
}
