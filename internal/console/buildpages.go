package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// The builder's pages: New form, the field editor with its preview, the
// version history, and duplicate, archive, import and export.

// Preview renders a form's hosted page for the builder (hosted.Handler's
// Preview); nil shows no preview.
type Preview func(w http.ResponseWriter, r *http.Request, f *form.Form, action string)

func (h *Handler) registerBuild(route func(pattern string, fn func(http.ResponseWriter, *http.Request, page) error)) {
	route("GET /admin/forms/new", h.newFormPage)
	route("POST /admin/forms/new", h.newForm)
	route("GET /admin/forms/new/id", h.idCheck)
	route("GET /admin/forms/{form}/build", h.buildPage)
	route("POST /admin/forms/{form}/build", h.build)
	route("GET /admin/forms/{form}/preview", h.preview)
	// The preview's own form posts here to show a participant's messages;
	// it changes nothing, so it carries no CSRF token.
	route("POST /admin/forms/{form}/preview", h.preview)
	route("GET /admin/forms/{form}/versions", h.versionsPage)
	route("POST /admin/forms/{form}/versions/{n}/rollback", h.rollback)
	route("POST /admin/forms/{form}/duplicate", h.duplicate)
	route("POST /admin/forms/{form}/archive", h.archive(true))
	route("POST /admin/forms/{form}/unarchive", h.archive(false))
	route("GET /admin/forms/{form}/definition.yaml", h.exportYAML)
	route("GET /admin/forms/{form}/delete", h.deleteFormPage)
	route("POST /admin/forms/{form}/delete", h.deleteForm)
}

// deleteView is the page that confirms deleting a form with what it
// holds: the counts of what is erased, and the id to type.
type deleteView struct {
	Form     *form.Form
	Contents store.FormContents
	// Typed is what was typed, when it was not the id; Busy says the
	// journal still held undecided entries of the form.
	Typed string
	Wrong bool
	Busy  bool
}

// deleteFormPage shows what deleting the form would erase and asks for
// its id.
func (h *Handler) deleteFormPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	return h.renderDelete(w, r, p, deleteView{Form: f}, http.StatusOK)
}

func (h *Handler) renderDelete(w http.ResponseWriter, r *http.Request, p page, v deleteView, status int) error {
	c, err := h.adm.FormContents(r.Context(), v.Form)
	if err != nil {
		return err
	}
	v.Contents = c
	p.Nav, p.Title, p.Data = "forms", title(v.Form, p.L), v
	h.render(w, status, "deleteform", p)
	return nil
}

// deleteForm deletes a form: one that holds nothing at once (the form's
// page offers a button), one that holds entries when its id is typed
// (the page above); a wrong id or entries still being processed show the
// page again, saying so.
func (h *Handler) deleteForm(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	typed := strings.TrimSpace(r.PostFormValue("confirm"))
	if _, err = h.adm.DeleteForm(r.Context(), p.P, f, typed); err == nil {
		return back(w, r, "/admin/forms", "deleted")
	}
	switch problem.From(err).Code {
	case problem.CodeDeleteUnconfirmed:
		return h.renderDelete(w, r, p, deleteView{Form: f, Typed: typed, Wrong: typed != ""}, http.StatusConflict)
	case problem.CodeFormBusy:
		return h.renderDelete(w, r, p, deleteView{Form: f, Busy: true}, http.StatusConflict)
	}
	return err
}

var formID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// buildSites are the sites the principal may build on, for the site
// choice; nil when it may build on every site (then it types one).
func (h *Handler) buildSites(p accounts.Principal) []string {
	if p.EverySite() {
		return nil
	}
	var out []string
	for _, s := range p.Sites {
		if p.Can(accounts.EditForms, s) {
			out = append(out, s)
		}
	}
	return out
}

// knownSites are the sites of the forms the principal sees, to suggest.
func (h *Handler) knownSites(p accounts.Principal) []string {
	out := h.buildSites(p)
	if out != nil {
		return out
	}
	for _, f := range h.adm.VisibleForms(p) {
		if !slices.Contains(out, f.Def.Site) {
			out = append(out, f.Def.Site)
		}
	}
	slices.Sort(out)
	return out
}

type newFormView struct {
	Templates           []string
	Sites, Known        []string
	Template, Site, ID  string
	TitleEN, TitleZH    string
	Langs, YAML, Source string
	Problems            []string
	Import              bool
}

func (h *Handler) newFormPage(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("edit") {
		return accounts.ErrForbidden
	}
	v := newFormView{Templates: formTemplates, Sites: h.buildSites(p.P), Known: h.knownSites(p.P), Template: "blank", Langs: "both", Import: r.URL.Query().Get("import") == "1"}
	if len(v.Sites) > 0 {
		v.Site = v.Sites[0]
	}
	if p.L.Tag == chinese.Tag {
		v.Langs = "zh"
	}
	p.Nav, p.Title, p.Data = "forms", p.L.T["new.title"], v
	h.render(w, http.StatusOK, "newform", p)
	return nil
}

// idCheck answers the New form page's script: is an id free, and a
// suggestion from a title.
func (h *Handler) idCheck(w http.ResponseWriter, r *http.Request, p page) error {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		id = suggestID(q.Get("title"))
	}
	id, taken, err := h.freeID(r, id, q.Get("id") == "")
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(map[string]any{"id": id, "taken": taken, "valid": formID.MatchString(id)})
}

// freeID says whether id is taken; with next, it finds the first free
// id-2, id-3, … instead.
func (h *Handler) freeID(r *http.Request, id string, next bool) (string, bool, error) {
	base := id
	for i := 2; ; i++ {
		taken, err := h.idTaken(r, id)
		if err != nil || !taken || !next || i > 99 {
			return id, taken, err
		}
		id = base + "-" + strconv.Itoa(i)
	}
}

func (h *Handler) idTaken(r *http.Request, id string) (bool, error) {
	if id == "new" {
		return true, nil
	}
	taken, err := h.adm.IDTaken(r.Context(), id)
	if err != nil || taken {
		return taken, err
	}
	_, ok, err := h.adm.Store.FormDraft(r.Context(), id)
	return ok, err
}

// newForm makes a new form's draft from a template (or pasted YAML) and
// opens it in the builder; nothing is published yet.
func (h *Handler) newForm(w http.ResponseWriter, r *http.Request, p page) error {
	if !p.CanAnywhere("edit") {
		return accounts.ErrForbidden
	}
	f := r.PostForm
	v := newFormView{Templates: formTemplates, Sites: h.buildSites(p.P), Known: h.knownSites(p.P), Template: f.Get("template"),
		Site: strings.TrimSpace(f.Get("site")), ID: strings.TrimSpace(f.Get("id")), TitleEN: strings.TrimSpace(f.Get("title_en")),
		TitleZH: strings.TrimSpace(f.Get("title_zh")), Langs: f.Get("langs"), YAML: f.Get("yaml"), Import: f.Get("import") == "1"}
	if v.Langs != "en" && v.Langs != "zh" {
		v.Langs = "both"
	}
	fail := func(key string, args ...any) error {
		v.Problems = append(v.Problems, fmt.Sprintf(text(p.L, key), args...))
		return nil
	}
	var src []byte
	if v.Import {
		// An engineer's YAML: its own id and site.
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(v.YAML), &doc); err != nil || mapping(&doc) == nil {
			fail("new.bad-yaml")
		} else {
			m := mapping(&doc)
			if v.ID == "" {
				v.ID = scalar(m, "id")
			}
			if v.Site == "" {
				v.Site = scalar(m, "site")
			}
			set(m, "id", str(v.ID))
			set(m, "site", orNil(v.Site, str))
			src, _ = yaml.Marshal(&doc)
		}
	} else {
		tsrc, ok := templateSource(v.Template)
		if !ok {
			fail("new.bad-template")
		}
		if v.TitleEN == "" && v.TitleZH == "" {
			fail("new.need-title")
		}
		if v.ID == "" {
			v.ID = suggestID(v.TitleEN)
			v.ID, _, _ = h.freeID(r, v.ID, true)
		}
		if ok {
			d, base, err := readDraft(tsrc, time.UTC)
			if err != nil {
				return err
			}
			d.ID, d.Site, d.Langs, d.TitleEN, d.TitleZH = v.ID, v.Site, v.Langs, v.TitleEN, v.TitleZH
			if src, err = d.yaml(base, time.UTC); err != nil {
				return err
			}
		}
	}
	if v.Site == "" {
		v.Site = "default"
	}
	if !formID.MatchString(v.ID) {
		fail("new.bad-id", v.ID)
	} else if taken, err := h.idTaken(r, v.ID); err != nil {
		return err
	} else if taken {
		fail("new.id-taken", v.ID)
	}
	if !p.P.Can(accounts.EditForms, v.Site) {
		fail("new.bad-site", v.Site)
	}
	if v.Problems != nil {
		p.Nav, p.Title, p.Error, p.Data = "forms", p.L.T["new.title"], p.L.T["new.invalid"], v
		h.render(w, http.StatusUnprocessableEntity, "newform", p)
		return nil
	}
	if err := h.adm.SaveDraft(r.Context(), p.P, v.ID, v.Site, src); err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(v.ID)+"/build", "draft-made")
}

// builderView is the field editor's page.
type builderView struct {
	D         draftForm
	Published *form.Form
	HasDraft  bool
	DraftAt   time.Time
	Types     []string
	Sites     []string
	Problems  []form.Problem
	Confirm   *confirmView
	Focus     int
}

// buildSource is what the builder starts from: the draft, else the
// published definition as the principal may read it.
func (h *Handler) buildSource(r *http.Request, p page) (*form.Form, store.FormDraft, bool, []byte, error) {
	f, d, ok, err := h.adm.BuildTarget(r.Context(), p.P, r.PathValue("form"))
	if err != nil {
		return nil, d, false, nil, err
	}
	if ok {
		return f, d, true, d.Source, nil
	}
	return f, d, false, admin.DefinitionFor(p.P, f), nil
}

// organizerZone is the time zone the builder writes opening and closing
// times in: the one the page sent (the browser's), else Shanghai for a
// Chinese page, else UTC.
func organizerZone(name string, l lang) *time.Location {
	if name != "" {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	if l.Tag == chinese.Tag {
		if loc, err := time.LoadLocation("Asia/Shanghai"); err == nil {
			return loc
		}
	}
	return time.UTC
}

func (h *Handler) buildPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, dr, hasDraft, src, err := h.buildSource(r, p)
	if err != nil {
		return err
	}
	d, _, err := readDraft(src, organizerZone(r.URL.Query().Get("tz"), p.L))
	if err != nil {
		return err
	}
	focus := -1
	if n, err := strconv.Atoi(r.URL.Query().Get("focus")); err == nil {
		focus = n
	}
	v := builderView{D: d, Published: f, HasDraft: hasDraft, DraftAt: dr.SavedAt, Types: builderTypes, Sites: h.knownSites(p.P), Focus: focus}
	h.renderBuilder(w, http.StatusOK, p, v)
	return nil
}

func (h *Handler) renderBuilder(w http.ResponseWriter, status int, p page, v builderView) {
	p.Nav = "forms"
	p.Title = fmt.Sprintf(text(p.L, "build.title"), orID(v.D.TitleEN, v.D.TitleZH, v.D.ID, p.L))
	p.Data = v
	h.render(w, status, "builder", p)
}

func orID(en, zh, id string, l lang) string {
	if l.Tag == chinese.Tag && zh != "" {
		return zh
	}
	if en != "" {
		return en
	}
	if zh != "" {
		return zh
	}
	return id
}

// build is the editor's every button: a change to the fields (add, move,
// remove), saving the draft (the script does it as the organizer types,
// for the preview), or publishing it.
func (h *Handler) build(w http.ResponseWriter, r *http.Request, p page) error {
	f, dr, hasDraft, src, err := h.buildSource(r, p)
	if err != nil {
		return err
	}
	id := r.PathValue("form")
	var base yaml.Node
	if err := yaml.Unmarshal(src, &base); err != nil {
		return fmt.Errorf("read the draft of %s: %w", id, err)
	}
	d := draftFromForm(r.PostForm)
	d.ID = id
	tz := organizerZone(d.TZ, p.L)
	d.TZ = tz.String()
	op := r.PostFormValue("op")
	if op == "discard" {
		if err := h.adm.DiscardDraft(r.Context(), p.P, id); err != nil {
			return err
		}
		if f == nil {
			return back(w, r, "/admin/forms", "draft-discarded")
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(id)+"/build", "draft-discarded")
	}
	if d.Site == "" {
		// An emptied site is the form's own, not the default one.
		d.Site = dr.Site
		if f != nil && !hasDraft {
			d.Site = f.Def.Site
		}
	}
	focus := d.apply(op, r.PostFormValue("add_type"))
	v := builderView{D: d, Published: f, HasDraft: true, DraftAt: time.Now(), Types: builderTypes, Sites: h.knownSites(p.P), Focus: focus}
	out, err := d.yaml(&base, tz)
	if err != nil {
		v.Problems = []form.Problem{{Msg: err.Error()}}
		h.renderBuilder(w, http.StatusUnprocessableEntity, p, v)
		return nil
	}
	if err := h.adm.SaveDraft(r.Context(), p.P, id, orDefault(d.Site, "default"), out); err != nil {
		return err
	}
	if op != "publish" {
		if r.Header.Get("X-Formd-Draft") == "1" {
			// The script's save as the organizer types: the preview
			// reloads from the draft.
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		to := "/admin/forms/" + url.PathEscape(id) + "/build?tz=" + url.QueryEscape(d.TZ)
		if focus >= 0 {
			// The field gets the focus (autofocus, which a URL fragment
			// would turn off), for a keyboard user where they were.
			to += "&focus=" + strconv.Itoa(focus)
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return nil
	}
	// Publish: the same check forms check makes, each problem next to
	// the field it names; then the same plan and confirmation.
	restored, err := h.adm.RestoreSecrets(p.P, out)
	if err != nil {
		v.Problems = []form.Problem{{Msg: problem.From(err).Detail}}
		h.renderBuilder(w, http.StatusUnprocessableEntity, p, v)
		return nil
	}
	forms, err := form.Parse(restored, "")
	var de *form.DefinitionError
	if errors.As(err, &de) {
		v.Problems = attachProblems(&v.D, de.Problems)
		p.Error = p.L.T["build.invalid"]
		h.renderBuilder(w, http.StatusUnprocessableEntity, p, v)
		return nil
	}
	if err != nil {
		return err
	}
	pj, err := h.adm.Publish(r.Context(), p.P, id, out, r.PostFormValue("confirm"))
	if problem.From(err).Code == problem.CodeConfirmationRequired {
		plan, perr := h.adm.PlanAgainst(r.Context(), form.Set{Forms: forms})
		if perr != nil {
			return perr
		}
		v.Confirm = confirmOf(plan, pj.Confirm, p.L)
		h.renderBuilder(w, http.StatusConflict, p, v)
		return nil
	}
	if err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(id), "published")
}

// attachProblems puts each problem that names a field on that field, and
// returns the others.
func attachProblems(d *draftForm, ps []form.Problem) []form.Problem {
	var rest []form.Problem
	for _, pr := range ps {
		i := slices.IndexFunc(d.Fields, func(f draftField) bool { return pr.Field != "" && f.Name == pr.Field })
		if i < 0 {
			rest = append(rest, pr)
			continue
		}
		d.Fields[i].Problems = append(d.Fields[i].Problems, pr.Msg)
	}
	return rest
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// preview is the hosted page of the builder's draft (else the published
// definition), for the preview frames; a post to it is checked and shown
// as a participant would see it, nothing kept.
func (h *Handler) preview(w http.ResponseWriter, r *http.Request, p page) error {
	_, _, _, src, err := h.buildSource(r, p)
	if err != nil {
		return err
	}
	restored, err := h.adm.RestoreSecrets(p.P, src)
	if err != nil {
		restored = src
	}
	forms, err := form.Parse(restored, "")
	if err != nil || len(forms) != 1 || h.Preview == nil {
		p.Data = map[string]any{"Detail": p.L.T["preview.broken"]}
		h.render(w, http.StatusOK, "preview-broken", p)
		return nil
	}
	// The preview's language is ?in= (not ?lang=, which would also switch
	// the console's own language, as the language links do).
	pr := r.Clone(r.Context())
	q := pr.URL.Query()
	q.Set("lang", q.Get("in"))
	pr.URL.RawQuery = q.Encode()
	h.Preview(w, pr, forms[0], r.URL.RequestURI())
	return nil
}

type versionsView struct {
	Form     *form.Form
	Versions []store.FormVersion
	// Confirm is a rollback's confirmation, of version N.
	Confirm *confirmView
	N       int
}

func (h *Handler) versionsPage(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	vs, err := h.adm.Versions(r.Context(), f)
	if err != nil {
		return err
	}
	p.Nav, p.Title, p.Data = "forms", title(f, p.L), versionsView{Form: f, Versions: vs}
	h.render(w, http.StatusOK, "versions", p)
	return nil
}

// rollback publishes an earlier version again; a change that reaches
// entries shows its confirmation first.
func (h *Handler) rollback(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		return problem.New(problem.CodeVersionNotFound, "")
	}
	pj, _, err := h.adm.Rollback(r.Context(), p.P, f, n, r.PostFormValue("confirm"), false)
	if problem.From(err).Code == problem.CodeConfirmationRequired {
		v, verr := h.adm.Store.FormVersion(r.Context(), f.ID(), n)
		if verr != nil {
			return verr
		}
		forms, perr := form.Parse(v.Source, "")
		if perr != nil {
			return perr
		}
		plan, perr := h.adm.PlanAgainst(r.Context(), form.Set{Forms: forms})
		if perr != nil {
			return perr
		}
		cv := &confirmView{Token: pj.Confirm}
		for _, c := range plan.Changes {
			cv.Lines = append(cv.Lines, changeLines(c, p.L)...)
		}
		for _, rk := range plan.Risks {
			cv.Risks = append(cv.Risks, riskLine(rk, p.L))
		}
		vs, verr := h.adm.Versions(r.Context(), f)
		if verr != nil {
			return verr
		}
		p.Nav, p.Title = "forms", title(f, p.L)
		p.Data = versionsView{Form: f, Versions: vs, Confirm: cv, N: n}
		h.render(w, http.StatusConflict, "versions", p)
		return nil
	}
	if err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(f.ID())+"/versions", "rolled-back")
}

func (h *Handler) duplicate(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.EditForms)
	if err != nil {
		return err
	}
	id := strings.TrimSpace(r.PostFormValue("id"))
	if !formID.MatchString(id) {
		return problem.New(problem.CodeInvalidRequest, fmt.Sprintf(text(p.L, "new.bad-id"), id))
	}
	c, err := h.adm.Duplicate(r.Context(), p.P, f, id, nil)
	if err != nil {
		return err
	}
	return back(w, r, "/admin/forms/"+url.PathEscape(c.ID())+"/build", "duplicated")
}

func (h *Handler) archive(archive bool) func(http.ResponseWriter, *http.Request, page) error {
	return func(w http.ResponseWriter, r *http.Request, p page) error {
		f, err := h.formOf(r, p, accounts.EditForms)
		if err != nil {
			return err
		}
		if err := h.adm.Archive(r.Context(), p.P, f, archive); err != nil {
			return err
		}
		if archive {
			return back(w, r, "/admin/forms", "archived")
		}
		return back(w, r, "/admin/forms/"+url.PathEscape(f.ID()), "unarchived")
	}
}

// exportYAML downloads the definition (secrets as the principal may read
// them), to hand to an engineer or keep in a repository.
func (h *Handler) exportYAML(w http.ResponseWriter, r *http.Request, p page) error {
	f, err := h.formOf(r, p, accounts.Read)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+f.ID()+`.yaml"`)
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(admin.DefinitionFor(p.P, f))
	return err
}
