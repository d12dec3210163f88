package admin

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ConsoleReads is the part of the store the console's pages read.
type ConsoleReads interface {
	store.ConsoleStore
	History(ctx context.Context, entryID string) ([]store.Event, error)
	Capacities(ctx context.Context) (map[string]store.Capacity, error)
	Outcome(ctx context.Context, form, key string) (store.Outcome, bool, error)
}

// Statuses are the statuses an entry may have, in the order pages list
// them.
var Statuses = []string{store.StatusStored, store.StatusPending, store.StatusWaitlisted, store.StatusDeclined, store.StatusCancelled, store.StatusSpam,
	store.StatusDuplicate, store.StatusRejected, store.StatusDeadLettered, store.StatusUploadUsed, store.StatusUploadMissing, store.StatusChallengeInvalid}

// Selection is a view of a form's submissions: a search, filters and a
// page. The submissions page, its export buttons and the JSON API read it
// from the same query parameters: q, status (comma-separated), since,
// until (RFC 3339 or the datetime-local form 2006-01-02T15:04, UTC),
// before (the next cursor), limit.
type Selection struct {
	Query    string
	Statuses []string
	Since    time.Time
	Until    time.Time
	Before   store.Cursor
	Limit    int
}

// All says the selection is the whole form, unfiltered.
func (s Selection) All() bool {
	return s.Query == "" && len(s.Statuses) == 0 && s.Since.IsZero() && s.Until.IsZero()
}

// Values are the selection's query parameters, without the cursor.
func (s Selection) Values() url.Values {
	v := url.Values{}
	if s.Query != "" {
		v.Set("q", s.Query)
	}
	if len(s.Statuses) > 0 {
		v.Set("status", strings.Join(s.Statuses, ","))
	}
	if !s.Since.IsZero() {
		v.Set("since", s.Since.UTC().Format(time.RFC3339))
	}
	if !s.Until.IsZero() {
		v.Set("until", s.Until.UTC().Format(time.RFC3339))
	}
	return v
}

// ParseSelection reads a selection from query parameters.
func (h *Handler) ParseSelection(_ *form.Form, v url.Values) (Selection, error) {
	s := Selection{Query: strings.TrimSpace(v.Get("q"))}
	for _, st := range strings.Split(v.Get("status"), ",") {
		if st = strings.TrimSpace(st); st == "" {
			continue
		}
		if !slices.Contains(Statuses, st) {
			return s, problem.New(problem.CodeInvalidRequest, "status must be one or more of "+strings.Join(Statuses, ", "))
		}
		s.Statuses = append(s.Statuses, st)
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &s.Since}, {"until", &s.Until}} {
		raw := v.Get(t.name)
		if raw == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			// A datetime-local control sends minutes and no zone: UTC.
			ts, err = time.Parse("2006-01-02T15:04", raw)
		}
		if err != nil {
			return s, problem.New(problem.CodeInvalidRequest, t.name+" must be an RFC 3339 time such as 2027-03-01T09:00:00+08:00")
		}
		*t.dst = ts
	}
	if b := v.Get("before"); b != "" {
		cur, err := parseCursor(b)
		if err != nil {
			return s, problem.New(problem.CodeInvalidRequest, "before must be the next cursor of a previous page")
		}
		s.Before = cur
	}
	s.Limit, _ = strconv.Atoi(v.Get("limit"))
	return s, nil
}

// Needles are the byte strings an entry's data holds when a value
// matches what a person typed in the search box: the text itself inside
// any value (as typed and lower-cased), and, when it reads as one, the
// e-mail address or the phone number as formd stores them — normalized,
// so "138 0013 8000" finds "+8613800138000" (each phone field's region
// is tried, and international form).
func Needles(f *form.Form, q string) [][]byte {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil
	}
	var out [][]byte
	add := func(b []byte) {
		if len(b) > 0 && !slices.ContainsFunc(out, func(x []byte) bool { return string(x) == string(b) }) {
			out = append(out, b)
		}
	}
	inner := func(s string) []byte { j := form.JSONString(s); return j[1 : len(j)-1] }
	add(inner(q))
	add(inner(strings.ToLower(q)))
	// No test for "@" first: the box may hold a full-width ＠, which the
	// normalization intake uses turns into "@" as it does at intake.
	if e, err := form.NormalizeEmail(q); err == nil {
		add(form.JSONString(e))
	}
	regions := []string{""}
	for _, fd := range f.Fields() {
		if fd.Type == form.TypePhone && !slices.Contains(regions, fd.Region) {
			regions = append(regions, fd.Region)
		}
	}
	for _, region := range regions {
		n, err := form.NormalizePhone(q, region)
		if err != nil {
			continue
		}
		j := form.JSONString(n)
		add(j)
		if !strings.Contains(n, ";ext=") {
			add(append(slices.Clone(j[:len(j)-1]), ";ext="...))
		}
	}
	return out
}

// EntryPage is a page of a selection, newest first.
type EntryPage struct {
	Rows []store.Row
	// Next is the cursor of the next page; zero at the end.
	Next store.Cursor
	// Searched says a search read a bounded stretch of entries: when Next
	// is set and Rows are fewer than a page, older entries are still to
	// be searched.
	Searched bool
}

// Submissions reads a page of a form's selection: keyset pages by
// (seq, id), and a search bounded by store.MaxSearchScan entries a page.
func (h *Handler) Submissions(ctx context.Context, f *form.Form, s Selection) (EntryPage, error) {
	q := store.EntryQuery{Form: f.ID(), Statuses: s.Statuses, Since: s.Since, Until: s.Until, Before: s.Before, Limit: s.Limit}
	if s.Query != "" {
		rows, next, err := h.Store.SearchEntries(ctx, q, Needles(f, s.Query), store.MaxSearchScan)
		return EntryPage{Rows: rows, Next: next, Searched: true}, err
	}
	rows, err := h.Store.Entries(ctx, q)
	if err != nil {
		return EntryPage{}, err
	}
	p := EntryPage{Rows: rows}
	if len(rows) == store.PageSize(q.Limit) {
		last := rows[len(rows)-1]
		p.Next = store.Cursor{Seq: last.Seq, ID: last.ID}
	}
	return p, nil
}

// SelectionRows streams every entry of a selection, newest first, for an
// export of what the page shows.
func (h *Handler) SelectionRows(f *form.Form, s Selection) func(ctx context.Context, fn func(store.Row) error) error {
	return func(ctx context.Context, fn func(store.Row) error) error {
		s.Limit, s.Before = 500, store.Cursor{}
		for {
			p, err := h.Submissions(ctx, f, s)
			if err != nil {
				return err
			}
			for _, r := range p.Rows {
				if err := fn(r); err != nil {
					return err
				}
			}
			if p.Next == (store.Cursor{}) {
				return nil
			}
			s.Before = p.Next
		}
	}
}

// EntryView is one entry with its history and deliveries.
type EntryView struct {
	store.EntryDetail
	History []store.Event
	// Deliveries are nil, and DeliveriesConfigured false, while no
	// webhook or e-mail delivery is configured.
	Deliveries           []DeliveryView
	DeliveriesConfigured bool
	// SpamReason is why intake classed the entry as spam (a reason code
	// such as challenge-missing or honeypot), "" when it did not say.
	SpamReason string
}

// Entry reads one entry of a form with its history and deliveries.
func (h *Handler) Entry(ctx context.Context, f *form.Form, id string) (EntryView, error) {
	d, err := h.Store.Entry(ctx, f.ID(), id)
	if err != nil {
		return EntryView{}, err
	}
	v := EntryView{EntryDetail: d}
	if v.History, err = h.Store.History(ctx, id); err != nil {
		return v, err
	}
	if d.Status == store.StatusSpam && h.SpamReasons != nil {
		if v.SpamReason, err = h.SpamReasons.SpamReason(ctx, f.ID(), d.Key); err != nil {
			return v, err
		}
	}
	if h.Deliveries != nil {
		if v.Deliveries, err = h.Deliveries.ForEntry(ctx, id); err != nil {
			return v, err
		}
		v.DeliveriesConfigured = len(v.Deliveries) > 0 || notifies(h.Forms, f)
	}
	return v, nil
}

func (h *Handler) submissions(w http.ResponseWriter, r *http.Request, c call) error {
	s, err := h.ParseSelection(c.form, r.URL.Query())
	if err != nil {
		return err
	}
	p, err := h.Submissions(r.Context(), c.form, s)
	if err != nil {
		return err
	}
	out := make([]entryJSON, len(p.Rows))
	for i, row := range p.Rows {
		data, extra := export.SplitExtra(row.Data)
		out[i] = entryJSON{ID: row.ID, Key: row.Key, Status: row.Status, ReceivedAt: row.ReceivedAt.UTC(), Data: data, Extra: extra}
	}
	var next *string
	if p.Next != (store.Cursor{}) {
		cur := strconv.FormatUint(p.Next.Seq, 10) + ":" + p.Next.ID
		next = &cur
	}
	return writeJSON(w, http.StatusOK, map[string]any{"entries": out, "next": next, "searched": p.Searched})
}

type eventJSON struct {
	Seq    uint64    `json:"seq"`
	ID     string    `json:"id"`
	Type   string    `json:"type"`
	Status string    `json:"status"`
	At     time.Time `json:"at"`
}

func (h *Handler) entry(w http.ResponseWriter, r *http.Request, c call) error {
	v, err := h.Entry(r.Context(), c.form, r.PathValue("id"))
	if err != nil {
		return err
	}
	data, extra := export.SplitExtra(v.Data)
	hist := make([]eventJSON, len(v.History))
	for i, e := range v.History {
		hist[i] = eventJSON{Seq: e.Seq, ID: e.ID(), Type: e.Type, Status: e.Status, At: e.At.UTC()}
	}
	var sameAs *string
	if v.SameAs != "" {
		sameAs = &v.SameAs
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"id": v.ID, "key": v.Key, "status": v.Status, "decision": v.Decision, "received_at": v.ReceivedAt.UTC(),
		"decided_at": v.DecidedAt.UTC(), "receipt": hex.EncodeToString(v.Receipt[:]), "data": nullIfEmpty(data), "extra": extra,
		"same_as": sameAs, "history": hist, "deliveries": deliveriesJSON(v), "spam_reason": nullIfNone(v.SpamReason),
	})
}

// nullIfNone is s, or null for "".
func nullIfNone(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullIfEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// errNoDeliveries answers a redelivery while nothing delivers.
var errNoDeliveries = problem.New(problem.CodeNotFound, "no webhooks or e-mail are configured for this form")
