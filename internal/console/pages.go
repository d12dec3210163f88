package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// ---- sign in, sign out, set up ----

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Title: "", Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["login.title"]
	pg.Data = map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "Email": ""}
	pg.Flash = flashOf(r.URL.Query().Get("done"))
	if _, err := h.sessions.Authenticate(r); err == nil {
		http.Redirect(w, r, "/admin/forms", http.StatusSeeOther)
		return
	}
	h.render(w, http.StatusOK, "login", pg)
}

// sameOrigin refuses a sign-in or setup posted from another site (login
// CSRF): a browser sends Origin with every POST.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["login.title"]
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	email, next := r.PostFormValue("email"), safeNext(r.PostFormValue("next"))
	a, err := h.sessions.Login(r.Context(), email, r.PostFormValue("password"), h.clientIP(r))
	if err == nil {
		if _, err = h.sessions.IssueSession(w, r, a); err == nil {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
	}
	status := http.StatusUnauthorized
	msg := pg.L.T["login.failed"]
	var locked *accounts.LockedError
	switch {
	case errors.As(err, &locked):
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", itoa(int(locked.RetryAfter(time.Now()).Seconds())+1))
		msg = fmt.Sprintf(pg.L.T["login.locked"], locked.Until.UTC().Format("15:04")+" UTC")
	case !errors.Is(err, accounts.ErrBadCredentials) && !errors.Is(err, accounts.ErrInvalidEmail):
		h.errorPage(w, r, pg, err)
		return
	}
	pg.Error = msg
	pg.Data = map[string]any{"Next": next, "Email": email}
	h.render(w, status, "login", pg)
}

// safeNext keeps a redirect after sign-in inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/admin/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/admin/forms"
	}
	return next
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r)}
	p, err := h.sessions.Authenticate(r)
	if err == nil {
		if err := h.sessions.CheckCSRF(r, p); err != nil {
			h.errorPage(w, r, pg, err)
			return
		}
	}
	if err := h.sessions.ClearSession(w, r); err != nil {
		h.errorPage(w, r, pg, err)
		return
	}
	http.Redirect(w, r, "/admin/login?done=signed-out", http.StatusSeeOther)
}

func (h *Handler) setupPage(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["setup.title"]
	pg.Data = map[string]any{"Code": r.URL.Query().Get("code"), "Email": ""}
	h.render(w, http.StatusOK, "setup", pg)
}

func (h *Handler) setup(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["setup.title"]
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	code, email := r.PostFormValue("code"), r.PostFormValue("email")
	a, err := h.sessions.Setup(r.Context(), code, email, r.PostFormValue("password"), h.clientIP(r))
	if err == nil {
		if _, err = h.sessions.IssueSession(w, r, a); err == nil {
			http.Redirect(w, r, "/admin/forms?done=set-up", http.StatusSeeOther)
			return
		}
	}
	pr := problem.From(err)
	if pr.Status >= 500 {
		h.errorPage(w, r, pg, err)
		return
	}
	if pr.RetryAfter > 0 {
		w.Header().Set("Retry-After", itoa(pr.RetryAfter))
	}
	pg.Error = pr.Detail
	pg.Data = map[string]any{"Code": code, "Email": email}
	h.render(w, pr.Status, "setup", pg)
}

// resetPage is the page of a password reset link: whose password it sets,
// and the new password. A link that is wrong, used or expired says so.
func (h *Handler) resetPage(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["reset.title"]
	code := r.URL.Query().Get("code")
	a, err := h.sessions.ResetAccount(r.Context(), code)
	if err != nil {
		h.errorPage(w, r, pg, err)
		return
	}
	pg.Data = map[string]any{"Code": code, "Email": a.Email}
	h.render(w, http.StatusOK, "reset", pg)
}

func (h *Handler) reset(w http.ResponseWriter, r *http.Request) {
	pg := page{L: pickLang(w, r), Path: r.URL.RequestURI()}
	pg.Title = pg.L.T["reset.title"]
	if !sameOrigin(r) {
		h.errorPage(w, r, pg, accounts.ErrCSRF)
		return
	}
	code := r.PostFormValue("code")
	_, err := h.sessions.ResetPassword(r.Context(), code, r.PostFormValue("password"), h.clientIP(r))
	if err == nil {
		http.Redirect(w, r, "/admin/login?done=password-reset", http.StatusSeeOther)
		return
	}
	pr := problem.From(err)
	if pr.Status >= 500 || pr.Code != problem.CodeInvalidAccount {
		h.errorPage(w, r, pg, err)
		return
	}
	a, aerr := h.sessions.ResetAccount(r.Context(), code)
	if aerr != nil {
		h.errorPage(w, r, pg, aerr)
		return
	}
	pg.Error = pr.Detail
	pg.Data = map[string]any{"Code": code, "Email": a.Email}
	h.render(w, pr.Status, "reset", pg)
}

// ---- forms ----

func (h *Handler) forms(w http.ResponseWriter, r *http.Request, p page) error {
	var cards []card
	for _, f := range h.adm.VisibleForms(p.P) {
		c, err := h.cardOf(r, f)
		if err != nil {
			return err
		}
		cards = append(cards, c)
	}
	p.Nav, p.Title, p.Data = "forms", p.L.T["nav.forms"], cards
	h.render(w, http.StatusOK, "forms", p)
	return nil
}

// card is a form's live numbers and chart, as a card of the forms page
// (refreshed alone by the script).
type card struct {
	admin.FormStats
	Chart admin.Chart
	// Opening says the chart is the hour of the opening.
	Now time.Time
}

func (h *Handler) cardOf(r *http.Request, f *form.Form) (card, error) {
	st, err := h.adm.Stats(r.Context(), f)
	if err != nil {
		return card{}, err
	}
	since, until, opening := h.adm.ChartWindow(f)
	ch, err := h.adm.Chart(r.Context(), f, since, until)
	if err != nil {
		return card{}, err
	}
	ch.Opening = opening
	return card{FormStats: st, Chart: ch, Now: time.Now()}, nil
}

func (h *Handler) card(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	c, err := h.cardOf(r, f)
	if err != nil {
		return err
	}
	p.Data = map[string]any{"C": c, "Link": r.URL.Query().Get("link") != "0"}
	h.render(w, http.StatusOK, "card-fragment", p)
	return nil
}

func (h *Handler) formPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	c, err := h.cardOf(r, f)
	if err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), c
	h.render(w, http.StatusOK, "form", p)
	return nil
}

func title(f *form.Form, l lang) string {
	if t := f.Def.Title.For(l.Tag); t != "" {
		return t
	}
	return f.ID()
}

func (h *Handler) openClose(open bool) func(w http.ResponseWriter, r *http.Request, p page) error {
	return func(w http.ResponseWriter, r *http.Request, p page) error {
		f, err := h.formOf(r, p, accounts.Act)
		if err != nil {
			return err
		}
		if err := h.adm.SetOpen(r.Context(), p.P, f, open); err != nil {
			return err
		}
		done := "closed"
		if open {
			done = "opened"
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(f.ID()), done)
	}
}

func (h *Handler) editPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Data = map[string]any{"Form": f, "Source": string(admin.DefinitionFor(p.P, f))}
	h.render(w, http.StatusOK, "edit", p)
	return nil
}

// edit applies the YAML of the form's editor; a definition that does not
// check comes back with every problem next to the text, nothing applied.
func (h *Handler) edit(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	src := r.PostFormValue("definition")
	var problems []form.Problem
	restored, err := h.adm.RestoreSecrets(p.P, []byte(src))
	if err != nil {
		problems = []form.Problem{{Msg: problem.From(err).Detail}}
		restored = []byte(src)
	}
	forms, err := form.Parse(restored, "")
	var de *form.DefinitionError
	switch {
	case problems != nil:
	case errors.As(err, &de):
		problems = de.Problems
	case err != nil:
		return err
	case len(forms) != 1 || forms[0].ID() != f.ID():
		problems = []form.Problem{{Msg: fmt.Sprintf(p.L.T["edit.one-form"], f.ID())}}
	}
	if problems == nil {
		if shown, err := h.confirmChange(w, r, p, f, restored, src); shown || err != nil {
			return err
		}
		if _, err := h.adm.ApplyForms(r.Context(), p.P, restored); err != nil {
			return err
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(f.ID()), "saved")
	}
	p.Nav, p.Title = "forms", title(f, p.L)
	p.Error = p.L.T["edit.invalid"]
	p.Data = map[string]any{"Form": f, "Source": src, "Problems": problems}
	h.render(w, http.StatusUnprocessableEntity, "edit", p)
	return nil
}

// ---- submissions ----

// column is a column the submissions table may show.
type column struct {
	Name, Label string
	Shown       bool
}

// submissionsView is the submissions page.
type submissionsView struct {
	Form     *form.Form
	Sel      admin.Selection
	Page     admin.EntryPage
	Columns  []column
	Cells    [][]string // per row, the shown fields' values
	Statuses []string
	Status   string
	Query    url.Values // the selection, with the columns chosen
	// Next is the next page's URL ("" on the last); Export the export
	// URL of each format, for the selection shown.
	Next      string
	Export    map[string]string
	Searched  bool
	ShownCols int
}

func (h *Handler) submissions(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sel, err := h.adm.ParseSelection(f, q)
	if err != nil {
		return err
	}
	pg, err := h.adm.Submissions(r.Context(), f, sel)
	if err != nil {
		return err
	}
	v := submissionsView{Form: f, Sel: sel, Page: pg, Statuses: admin.Statuses, Searched: pg.Searched}
	if len(sel.Statuses) == 1 {
		v.Status = sel.Statuses[0]
	}
	chosen := q["col"]
	for i, fd := range f.Fields() {
		label := fd.Label.For(p.L.Tag)
		if label == "" {
			label = fd.Name
		}
		shown := slices.Contains(chosen, fd.Name) || len(chosen) == 0 && i < 4
		if shown {
			v.ShownCols++
		}
		v.Columns = append(v.Columns, column{Name: fd.Name, Label: label, Shown: shown})
	}
	for _, c := range removedColumns(f, pg.Rows, chosen, p.L.Tag) {
		if c.Shown {
			v.ShownCols++
		}
		v.Columns = append(v.Columns, c)
	}
	for _, row := range pg.Rows {
		vals := rowValues(row)
		var cells []string
		for _, c := range v.Columns {
			if c.Shown {
				cells = append(cells, vals[c.Name])
			}
		}
		if len(row.Data) == 0 && len(cells) > 0 {
			cells[0] = p.L.T["sub.erased"]
		}
		v.Cells = append(v.Cells, cells)
	}
	sq := sel.Values()
	for _, c := range chosen {
		sq.Add("col", c)
	}
	v.Query = sq
	if pg.Next != (store.Cursor{}) {
		nq := url.Values{}
		for k, vs := range sq {
			nq[k] = vs
		}
		nq.Set("before", strconv.FormatUint(pg.Next.Seq, 10)+":"+pg.Next.ID)
		v.Next = "/admin/forms/" + url.PathEscape(f.ID()) + "/submissions?" + nq.Encode()
	}
	v.Export = map[string]string{}
	for _, format := range []string{"csv", "xlsx", "jsonl"} {
		ex := sel.Values()
		ex.Set("format", format)
		ex.Set("header", "labels")
		ex.Set("lang", p.L.Tag)
		v.Export[format] = "/v1/admin/forms/" + url.PathEscape(f.ID()) + "/export?" + ex.Encode()
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "submissions", p)
	return nil
}

// rowValues are an entry's values as text, by field name.
func rowValues(r store.Row) map[string]string {
	out := map[string]string{}
	for k, raw := range decodeData(r.Data) {
		out[k] = valueText(raw)
	}
	return out
}

// ---- one entry ----

type entryView struct {
	Form    *form.Form
	Entry   admin.EntryView
	Fields  []fieldValue
	Journal *journal.Entry
	Promote bool
}

type fieldValue struct{ Label, Value string }

func (h *Handler) entry(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	e, err := h.adm.Entry(r.Context(), f, r.PathValue("id"))
	if err != nil {
		return err
	}
	v := entryView{Form: f, Entry: e}
	vals := rowValues(e.Row)
	for _, fd := range f.Fields() {
		label := fd.Label.For(p.L.Tag)
		if label == "" {
			label = fd.Name
		}
		v.Fields = append(v.Fields, fieldValue{label, vals[fd.Name]})
		delete(vals, fd.Name)
	}
	v.Fields = append(v.Fields, otherValues(f, e.Row, vals, p.L.Tag)...)
	if je, ok, err := h.adm.Journal.Lookup(r.Context(), f.ID(), e.Key); err == nil && ok {
		v.Journal = &je
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "entry", p)
	return nil
}

// entryAction is the entry page's buttons: cancel, spam, not-spam,
// redeliver.
func (h *Handler) entryAction(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Act)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	to := "/admin/forms/" + url.PathEscape(f.ID()) + "/entries/" + url.PathEscape(id)
	var promoted []string
	done := r.PathValue("action")
	switch done {
	case "cancel":
		promoted, err = h.adm.Cancel(r.Context(), p.P, f, id)
		done = "cancelled"
	case "spam":
		promoted, err = h.adm.MarkSpam(r.Context(), p.P, f, id)
		done = "marked-spam"
	case "not-spam":
		var o store.Outcome
		o, err = h.adm.NotSpam(r.Context(), p.P, f, id)
		done = "not-spam-" + o.Status
	case "redeliver":
		seq, _ := strconv.ParseUint(r.PostFormValue("event"), 10, 64)
		err = h.adm.Redeliver(r.Context(), p.P, f, id, seq, r.PostFormValue("endpoint"))
		done = "redelivering"
	default:
		return problem.New(problem.CodeNotFound, "")
	}
	if err != nil {
		return err
	}
	if len(promoted) > 0 {
		to += "?promoted=" + url.QueryEscape(strings.Join(promoted, ","))
	}
	return back(w, r, to, done)
}

func (h *Handler) retry(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Act)
	if err != nil {
		return err
	}
	if err := h.adm.RetryDeadLetter(r.Context(), p.P, f, r.PathValue("key")); err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(f.ID())+"/proof", "retried")
}

// ---- proof, audit, replay ----

type proofView struct {
	Form    *form.Form
	Proof   admin.Proof
	Rate    float64
	Started int64
	Reached int64
	RateOK  bool
	Jobs    []admin.Job
	Now     time.Time
}

func (h *Handler) proof(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	until := time.Now().UTC()
	pr, err := h.adm.ProofOf(r.Context(), f, until.Add(-admin.ProofWindow), until)
	if err != nil {
		return err
	}
	v := proofView{Form: f, Proof: pr, Jobs: h.adm.Jobs(p.P, f.ID()), Now: time.Now()}
	v.Rate, v.Started, v.Reached, v.RateOK = pr.ArrivalRate()
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), v
	h.render(w, http.StatusOK, "proof", p)
	return nil
}

func (h *Handler) startAudit(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	j, err := h.adm.StartAudit(p.P, journal.Filter{Form: f.ID()})
	if err != nil {
		return err
	}
	return back(w, r, "/admin/jobs/"+j.ID, "")
}

func (h *Handler) replayPage(w http.ResponseWriter, r *http.Request, p page) error {
	var forms []*form.Form
	for _, f := range h.adm.VisibleForms(p.P) {
		if p.P.Can(accounts.Act, f.Def.Site) {
			forms = append(forms, f)
		}
	}
	p.Nav, p.Title = "replay", p.L.T["nav.replay"]
	p.Data = map[string]any{"Forms": forms, "Form": r.URL.Query().Get("form"), "Jobs": h.adm.Jobs(p.P, "")}
	h.render(w, http.StatusOK, "replay", p)
	return nil
}

func (h *Handler) startReplay(w http.ResponseWriter, r *http.Request, p page) error {
	f := journal.Filter{Form: r.PostFormValue("form"), Site: r.PostFormValue("site")}
	var err error
	f.Since, f.Until, err = parseLocalWindow(r.PostFormValue("since"), r.PostFormValue("until"))
	if err != nil {
		return problem.New(problem.CodeInvalidRequest, err.Error())
	}
	j, err := h.adm.StartReplay(r.Context(), p.P, f, r.PostFormValue("mode") != "run", r.PostFormValue("retry_dead") == "on")
	if err != nil {
		return err
	}
	return back(w, r, "/admin/jobs/"+j.ID, "")
}

// parseLocalWindow reads the window of datetime-local controls (UTC).
func parseLocalWindow(since, until string) (time.Time, time.Time, error) {
	var out [2]time.Time
	for i, v := range []string{since, until} {
		if v == "" {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04", v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				return out[0], out[1], fmt.Errorf("%q is not a time such as 2027-03-01T09:00", v)
			}
		}
		out[i] = t
	}
	return out[0], out[1], nil
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request, p page) error {
	j, err := h.adm.JobOf(p.P, r.PathValue("id"))
	if err != nil {
		return err
	}
	if j.Running() {
		// The page follows the job without a script.
		w.Header().Set("Refresh", "1")
	}
	p.Nav = "replay"
	if j.Kind == "audit" {
		p.Nav = "forms"
	}
	p.Title = p.L.T["job."+j.Kind]
	var replayKeys, auditKeys []string
	replayKeys = j.Replay.Keys()
	auditKeys = j.Audit.Keys()
	p.Data = map[string]any{"Job": j, "ReplayKeys": replayKeys, "AuditKeys": auditKeys, "Form": h.adm.Forms.Get(j.Filter.Form)}
	h.render(w, http.StatusOK, "job", p)
	return nil
}

// ---- forget a person ----

func (h *Handler) forgetPage(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("forget") {
		return accounts.ErrForbidden
	}
	p.Nav, p.Title = "forget", p.L.T["nav.forget"]
	p.Data = map[string]any{"Email": "", "Phone": "", "Region": ""}
	h.render(w, http.StatusOK, "forget", p)
	return nil
}

func (h *Handler) forget(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("forget") {
		return accounts.ErrForbidden
	}
	who := erasure.Person{Email: strings.TrimSpace(r.PostFormValue("email")), Phone: strings.TrimSpace(r.PostFormValue("phone")), Region: strings.TrimSpace(r.PostFormValue("region"))}
	dry := r.PostFormValue("mode") != "erase"
	rep, err := h.adm.ForgetPerson(r.Context(), p.P, who, dry)
	p.Nav, p.Title = "forget", p.L.T["nav.forget"]
	data := map[string]any{"Email": who.Email, "Phone": who.Phone, "Region": who.Region}
	var pr *problem.Problem
	switch {
	case errors.As(err, &pr) && pr.Status < 500:
		p.Error = pr.Detail
	case err != nil:
		return err
	default:
		data["Report"], data["DryRun"] = rep, dry
	}
	p.Data = data
	h.render(w, http.StatusOK, "forget", p)
	return nil
}

// ---- accounts and tokens ----

type accountsView struct {
	Accounts []accounts.Account
	Tokens   []accounts.Token
	NewToken string
	// ResetLink is a reset link just made, shown this once, until
	// ResetExpires.
	ResetLink    string
	ResetExpires time.Time
	Roles        []string
	Manage       bool
}

func (h *Handler) accountsPage(w http.ResponseWriter, r *http.Request, p page) error {
	v := accountsView{Roles: []string{"owner", "editor", "viewer"}, Manage: p.CanAnywhere("manage")}
	var err error
	if v.Manage {
		if v.Accounts, err = h.adm.Accounts.Accounts(r.Context(), p.P); err != nil {
			return err
		}
	}
	if v.Tokens, err = h.adm.Accounts.Tokens(r.Context(), p.P, ""); err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "accounts", p.L.T["nav.accounts"], v
	h.render(w, http.StatusOK, "accounts", p)
	return nil
}

func sitesOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

func (h *Handler) addAccount(w http.ResponseWriter, r *http.Request, p page) error {
	_, err := h.adm.Accounts.AddAccount(r.Context(), p.P, accounts.NewAccount{Email: r.PostFormValue("email"), Name: r.PostFormValue("name"),
		Role: accounts.Role(r.PostFormValue("role")), Sites: sitesOf(r.PostFormValue("sites")), Password: r.PostFormValue("password")})
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "account-added")
}

// accountsFailed shows the accounts page again with what was wrong, for
// a mistake of the person; anything else is an error page.
func (h *Handler) accountsFailed(w http.ResponseWriter, r *http.Request, p page, err error) error {
	pr := problem.From(err)
	if pr.Status >= 500 || pr.Status == http.StatusForbidden || pr.Status == http.StatusNotFound {
		return err
	}
	p.Error = pr.Detail
	if p.Error == "" {
		p.Error = err.Error()
	}
	return h.accountsShown(w, r, p, pr.Status, accountsView{})
}

func (h *Handler) accountAction(w http.ResponseWriter, r *http.Request, p page) error {
	id := r.PathValue("id")
	var err error
	switch r.PathValue("action") {
	case "role":
		_, err = h.adm.Accounts.ChangeRole(r.Context(), p.P, id, accounts.Role(r.PostFormValue("role")), sitesOf(r.PostFormValue("sites")))
	case "disable":
		_, err = h.adm.Accounts.SetDisabled(r.Context(), p.P, id, true)
	case "enable":
		_, err = h.adm.Accounts.SetDisabled(r.Context(), p.P, id, false)
	case "reset":
		return h.resetAccount(w, r, p, id)
	default:
		return problem.New(problem.CodeNotFound, "")
	}
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "account-"+r.PathValue("action"))
}

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, p page) error {
	acc := r.PostFormValue("account")
	if acc == "" {
		acc = p.P.AccountID
	}
	token, _, err := h.adm.Accounts.CreateToken(r.Context(), p.P, acc, r.PostFormValue("name"))
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	// Shown once, on this answer only: it is never stored or shown again.
	p.Flash = "token-created"
	return h.accountsShown(w, r, p, http.StatusCreated, accountsView{NewToken: token})
}

// accountsShown renders the accounts page with status and something shown
// this once (a new token, a reset link) or what was wrong.
func (h *Handler) accountsShown(w http.ResponseWriter, r *http.Request, p page, status int, v accountsView) error {
	v.Roles, v.Manage = []string{"owner", "editor", "viewer"}, p.CanAnywhere("manage")
	var err error
	if v.Manage {
		if v.Accounts, err = h.adm.Accounts.Accounts(r.Context(), p.P); err != nil {
			return err
		}
	}
	if v.Tokens, err = h.adm.Accounts.Tokens(r.Context(), p.P, ""); err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "accounts", p.L.T["nav.accounts"], v
	h.render(w, status, "accounts", p)
	return nil
}

// resetAccount makes a one-time reset link for another account and shows
// it this once, with when it expires.
func (h *Handler) resetAccount(w http.ResponseWriter, r *http.Request, p page, id string) error {
	code, expires, err := h.adm.Accounts.ResetLink(r.Context(), p.P, id)
	if err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	p.Flash = "reset-link"
	return h.accountsShown(w, r, p, http.StatusCreated, accountsView{ResetLink: scheme + "://" + r.Host + accounts.ResetURL(code), ResetExpires: expires})
}

// ---- one's own account ----

func (h *Handler) myAccount(w http.ResponseWriter, r *http.Request, p page) error {
	p.Nav, p.Title = "account", p.L.T["account.title"]
	h.render(w, http.StatusOK, "account", p)
	return nil
}

func (h *Handler) changePassword(w http.ResponseWriter, r *http.Request, p page) error {
	err := h.adm.Accounts.ChangePassword(r.Context(), p.P, r.PostFormValue("current"), r.PostFormValue("password"), h.clientIP(r))
	if err != nil {
		pr := problem.From(err)
		if pr.Status >= 500 || pr.Status == http.StatusForbidden {
			return err
		}
		if pr.RetryAfter > 0 {
			w.Header().Set("Retry-After", itoa(pr.RetryAfter))
		}
		p.Error = pr.Detail
		p.Nav, p.Title = "account", p.L.T["account.title"]
		h.render(w, pr.Status, "account", p)
		return nil
	}
	return back(w, r, "/admin/account", "password-changed")
}

func (h *Handler) signOutEverywhere(w http.ResponseWriter, r *http.Request, p page) error {
	if _, err := h.adm.Accounts.SignOutEverywhere(r.Context(), p.P); err != nil {
		return err
	}
	if err := h.sessions.ClearSession(w, r); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/login?done=signed-out-everywhere", http.StatusSeeOther)
	return nil
}

func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, p page) error {
	if err := h.adm.Accounts.RevokeToken(r.Context(), p.P, r.PathValue("id")); err != nil {
		return h.accountsFailed(w, r, p, err)
	}
	return back(w, r, "/admin/accounts", "token-revoked")
}

// ---- audit log ----

func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, p page) error {
	f := accounts.AuditFilter{Form: r.URL.Query().Get("form"), Limit: 100}
	var err error
	if f.Before, err = admin.ParseAuditCursor(r.URL.Query().Get("before")); err != nil {
		return err
	}
	if f.Form != "" {
		fm, err := h.adm.Authorize(p.P, f.Form, accounts.Read)
		if err != nil {
			return err
		}
		f.Sites = []string{fm.Def.Site}
	}
	list, err := h.adm.Accounts.Audit(r.Context(), p.P, f)
	if err != nil {
		return err
	}
	next := ""
	if len(list) == f.Limit {
		nq := url.Values{"before": {strconv.FormatInt(list[len(list)-1].ID, 10)}}
		if f.Form != "" {
			nq.Set("form", f.Form)
		}
		next = "/admin/audit?" + nq.Encode()
	}
	p.Nav, p.Title = "audit", p.L.T["nav.audit"]
	p.Data = map[string]any{"Entries": list, "Next": next, "Form": f.Form}
	h.render(w, http.StatusOK, "audit", p)
	return nil
}

// decodeData is an entry's values by field name: the form's fields and
// the extra fields it does not define, each as JSON.
func decodeData(raw []byte) map[string]json.RawMessage {
	data, extra := export.SplitExtra(raw)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(data, &m) // erased data (null) is no values
	if len(extra) > 0 {
		var ex map[string]json.RawMessage
		if json.Unmarshal(extra, &ex) == nil {
			if m == nil {
				m = map[string]json.RawMessage{}
			}
			for k, v := range ex {
				m[k] = v
			}
		}
	}
	return m
}

// valueText is a value as one cell of text, as exports write it.
func valueText(raw json.RawMessage) string { return export.CellText(raw) }
