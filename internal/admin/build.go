package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"go.yaml.in/yaml/v3"
)

// Building forms through the API (issue 31): create, plan, versions and
// rollback, duplicate, archive. Each publishes through putForms, as
// formd forms apply and the console's editor do: one validation
// (form.ParseSet), one change summary (form.Compare, PlanAgainst), and a
// confirmation for the changes that reach entries already collected.

// PlanJSON is a plan in the admin API: each form's changes in words, the
// changes that need confirming, and the token that confirms them (it
// names the definition's text: another text needs its own).
type PlanJSON struct {
	Changes []ChangeJSON `json:"changes"`
	Risks   []string     `json:"risks"`
	Confirm string       `json:"confirm"`
}

// ChangeJSON is one form's change.
type ChangeJSON struct {
	Form  string   `json:"form"`
	New   bool     `json:"new"`
	Lines []string `json:"lines"`
}

// ConfirmToken names a definition's text, for the confirmation of its
// risky changes.
func ConfirmToken(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:16])
}

func planJSON(p Plan, src []byte) PlanJSON {
	out := PlanJSON{Changes: []ChangeJSON{}, Risks: []string{}, Confirm: ConfirmToken(src)}
	for _, c := range p.Changes {
		out.Changes = append(out.Changes, ChangeJSON{Form: c.Form, New: c.New, Lines: nonNil(c.Lines())})
	}
	for _, r := range p.Risks {
		out.Risks = append(out.Risks, r.String())
	}
	return out
}

// CheckDefinitions parses definitions as ApplyForms does (secrets an
// editor could not read restored, every problem named) and checks the
// principal may edit each site they name, before and after.
func (h *Handler) CheckDefinitions(p accounts.Principal, raw []byte) ([]byte, form.Set, error) {
	raw, err := h.RestoreSecrets(p, raw)
	if err != nil {
		return nil, form.Set{}, err
	}
	set, err := form.ParseSet(raw, "", h.CheckURL)
	if err != nil {
		var de *form.DefinitionError
		if errors.As(err, &de) {
			return nil, form.Set{}, problem.New(problem.CodeInvalidDefinition, de.Error())
		}
		return nil, form.Set{}, err
	}
	for _, site := range set.Sites {
		if !p.Can(accounts.EditForms, site.ID()) {
			return nil, form.Set{}, fmt.Errorf("site %s: %w", site.ID(), accounts.ErrForbidden)
		}
	}
	for _, f := range set.Forms {
		if !p.Can(accounts.EditForms, f.Def.Site) {
			return nil, form.Set{}, fmt.Errorf("form %s on site %s: %w", f.ID(), f.Def.Site, accounts.ErrForbidden)
		}
		if old := h.Forms.Get(f.ID()); old != nil && !p.Can(accounts.EditForms, old.Def.Site) {
			return nil, form.Set{}, fmt.Errorf("form %s on site %s: %w", f.ID(), old.Def.Site, accounts.ErrForbidden)
		}
	}
	return raw, set, nil
}

// PlanDefinitions is what applying definitions would change, as
// POST /v1/admin/forms/plan answers it.
func (h *Handler) PlanDefinitions(ctx context.Context, p accounts.Principal, raw []byte) (PlanJSON, error) {
	restored, set, err := h.CheckDefinitions(p, raw)
	if err != nil {
		return PlanJSON{}, err
	}
	plan, err := h.PlanAgainst(ctx, set)
	if err != nil {
		return PlanJSON{}, err
	}
	return planJSON(plan, restored), nil
}

// CreateForm publishes one new form: a form of that id, on any site,
// archived or not, is form-exists.
func (h *Handler) CreateForm(ctx context.Context, p accounts.Principal, raw []byte, action string) (*form.Form, error) {
	_, set, err := h.CheckDefinitions(p, raw)
	if err != nil {
		return nil, err
	}
	if len(set.Forms) != 1 || len(set.Sites) != 0 {
		return nil, problem.New(problem.CodeInvalidDefinition, "a new form is one form's definition, without site settings")
	}
	f := set.Forms[0]
	if err := h.checkFree(ctx, f.ID()); err != nil {
		return nil, err
	}
	if _, err := h.putForms(ctx, call{p: p}, set, action); err != nil {
		return nil, err
	}
	return f, nil
}

// checkFree says no form has this id: none loaded, and none the store
// has ever published (another instance's new form this one has not
// loaded yet).
func (h *Handler) checkFree(ctx context.Context, id string) error {
	if h.Forms.Get(id) != nil {
		return problem.New(problem.CodeFormExists, fmt.Sprintf("a form with the id %q exists already", id))
	}
	vs, err := h.Store.FormVersions(ctx, id)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		return problem.New(problem.CodeFormExists, fmt.Sprintf("a form with the id %q exists already", id))
	}
	return nil
}

// IDTaken says a form id is in use, for the console's suggestion of one.
func (h *Handler) IDTaken(ctx context.Context, id string) (bool, error) {
	err := h.checkFree(ctx, id)
	if problem.From(err).Code == problem.CodeFormExists {
		return true, nil
	}
	return false, err
}

// Versions lists a form's published versions, the newest first.
func (h *Handler) Versions(ctx context.Context, f *form.Form) ([]store.FormVersion, error) {
	return h.Store.FormVersions(ctx, f.ID())
}

// Version reads one version's definition, its secrets hidden from whom
// may not read them.
func (h *Handler) Version(ctx context.Context, p accounts.Principal, f *form.Form, n int) (store.FormVersion, error) {
	v, err := h.Store.FormVersion(ctx, f.ID(), n)
	if err != nil {
		return v, err
	}
	if !p.Can(accounts.ReadSecrets, f.Def.Site) {
		v.Source = form.MaskSecrets(v.Source)
	}
	return v, nil
}

// Rollback publishes version n of a form again, as a new version: its
// plan first, and when that reaches entries already collected nothing
// happens unless confirm is the plan's token (confirmation-required).
// dryRun only plans.
func (h *Handler) Rollback(ctx context.Context, p accounts.Principal, f *form.Form, n int, confirm string, dryRun bool) (PlanJSON, bool, error) {
	v, err := h.Store.FormVersion(ctx, f.ID(), n)
	if err != nil {
		return PlanJSON{}, false, err
	}
	forms, err := form.Parse(v.Source, "")
	if err != nil || len(forms) != 1 || forms[0].ID() != f.ID() {
		return PlanJSON{}, false, problem.New(problem.CodeInvalidDefinition, fmt.Sprintf("version %d of %s does not check with this release: %v", n, f.ID(), err))
	}
	if !p.Can(accounts.EditForms, forms[0].Def.Site) {
		return PlanJSON{}, false, fmt.Errorf("form %s on site %s: %w", f.ID(), forms[0].Def.Site, accounts.ErrForbidden)
	}
	set := form.Set{Forms: forms}
	plan, err := h.PlanAgainst(ctx, set)
	if err != nil {
		return PlanJSON{}, false, err
	}
	pj := planJSON(plan, v.Source)
	if dryRun {
		return pj, false, nil
	}
	if len(plan.Risks) > 0 && confirm != pj.Confirm {
		return pj, false, confirmationRequired(pj)
	}
	_, err = h.putForms(ctx, call{p: p, form: f}, set, "form.rollback")
	return pj, err == nil, err
}

func confirmationRequired(pj PlanJSON) error {
	return problem.New(problem.CodeConfirmationRequired, strings.Join(pj.Risks, "; ")+"; nothing was changed: to apply, send the same request again with confirm="+pj.Confirm+" (a query parameter)")
}

// Duplicate publishes a copy of a form under a new id (next year's fair):
// its definition as stored, with its id changed, and its title when one
// is given; no entries come with it.
func (h *Handler) Duplicate(ctx context.Context, p accounts.Principal, f *form.Form, newID string, title form.Text) (*form.Form, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(f.Source(), &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("duplicate %s: its stored definition is not one YAML mapping", f.ID())
	}
	m := doc.Content[0]
	setKey(m, "id", newID)
	if len(title) > 0 {
		setNode(m, "title", textNode(title))
	}
	src, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("duplicate %s: %w", f.ID(), err)
	}
	return h.CreateForm(ctx, p, src, "form.duplicate")
}

// textNode is a Text as YAML: a plain string when it has no languages.
func textNode(t form.Text) *yaml.Node {
	if s, ok := t[""]; ok && len(t) == 1 {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	keys := slices.Sorted(maps.Keys(t))
	for _, k := range keys {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: t[k]})
	}
	return n
}

func setNode(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}

// Archive closes a form and takes it out of the forms list (the list
// shows it when asked for archived forms); its entries stay, under its
// retention. Unarchive puts it back in the list, still closed.
func (h *Handler) Archive(ctx context.Context, p accounts.Principal, f *form.Form, archive bool) error {
	if !archive {
		if err := h.Store.SetArchive(ctx, f.ID(), nil); err != nil {
			return err
		}
		return h.audit(ctx, call{p: p, form: f}, "form.unarchive", f.ID(), "")
	}
	if f.OpenAt(h.Now()) || f.Def.ClosesAt == nil {
		if err := h.SetOpen(ctx, p, f, false); err != nil {
			return err
		}
	}
	if err := h.Store.SetArchive(ctx, f.ID(), &store.Archive{At: h.Now(), By: p.String()}); err != nil {
		return err
	}
	return h.audit(ctx, call{p: p, form: f}, "form.archive", f.ID(), "")
}

// FormDeletion is what deleting a form erased.
type FormDeletion struct {
	Erased store.FormContents
	// JournalKept says the journal cannot delete its copies: they stay
	// until its own limits remove them (as formd forget says).
	JournalKept bool
}

// FormContents counts what deleting the form would erase, for the
// confirmation the organizer types.
func (h *Handler) FormContents(ctx context.Context, f *form.Form) (store.FormContents, error) {
	return h.Store.FormContents(ctx, f.ID())
}

// DeleteForm deletes a form. One that holds nothing goes at once; one
// that holds entries, files, deliveries, dead letters, drafts or
// check-ins only when confirm is its id (form-delete-unconfirmed
// otherwise, counting what would be erased). It is closed first, so that
// no new entry is accepted; while the journal holds entries of it not
// yet decided it is refused (form-busy: try again in a moment). Then
// everything of it is erased (erasure.EraseForm: the journal's copies,
// the store's rows, the files' bytes queued) and it is deleted, its
// versions, draft and places with it; the audit log keeps that it was
// and what went (form.delete). Cut off, it is run again to finish.
func (h *Handler) DeleteForm(ctx context.Context, p accounts.Principal, f *form.Form, confirm string) (FormDeletion, error) {
	var d FormDeletion
	if h.Counter == nil {
		return d, problem.New(problem.CodeFormNotEmpty, "this journal cannot count a form's undecided entries, so no form can be known empty: archive it instead")
	}
	c, err := h.Counter.CountForm(ctx, f.ID())
	if err != nil {
		return d, err
	}
	if d.Erased, err = h.Store.FormContents(ctx, f.ID()); err != nil {
		return d, err
	}
	if !d.Erased.Empty() || c.Pending > 0 {
		if confirm != f.ID() {
			return d, unconfirmed(f.ID(), confirm, d.Erased, c.Pending)
		}
		if f.OpenAt(h.Now()) || f.Def.ClosesAt == nil {
			if err := h.SetOpen(ctx, p, f, false); err != nil {
				return d, fmt.Errorf("close %s before deleting it: %w", f.ID(), err)
			}
		}
		if c, err = h.Counter.CountForm(ctx, f.ID()); err != nil {
			return d, err
		}
		if c.Pending > 0 {
			return d, busy(f.ID(), c.Pending)
		}
	}
	// Twice at most: an entry another instance accepted before it learned
	// that the form closed may be decided between the erasure and the
	// delete.
	for range 2 {
		d.JournalKept, err = erasure.EraseForm(ctx, h.Store, h.Pruner, h.Forgetter, f.ID(), h.Now().Add(time.Hour))
		if errors.Is(err, journal.ErrPending) {
			return d, busy(f.ID(), 1)
		}
		if err != nil {
			return d, err
		}
		ok, err := h.Store.DeleteEmptyForm(ctx, f.ID())
		if err != nil {
			return d, err
		}
		if !ok {
			continue
		}
		if err := h.audit(ctx, call{p: p, form: f}, "form.delete", f.ID(), d.Detail()); err != nil {
			return d, err
		}
		if err := h.Forms.Refresh(ctx); err != nil {
			h.Log.Warn("form deleted; local refresh failed, the next periodic refresh drops it", "err", err)
		}
		return d, nil
	}
	return d, busy(f.ID(), 1)
}

// unconfirmed is the answer to deleting a form that holds something
// without its id typed: what would be erased, and how to confirm.
func unconfirmed(id, confirm string, c store.FormContents, pending int64) error {
	why := "deleting it erases them for good"
	if confirm != "" {
		why = fmt.Sprintf("the confirmation %q is not its id", confirm)
	}
	detail := fmt.Sprintf("form %s holds %s: %s; to delete it, confirm with its id (?confirm=%s), or archive it to keep them", id, c.Summary(), why, id)
	if c.Empty() {
		detail = fmt.Sprintf("form %s holds %d entries still being processed: %s; to delete it, confirm with its id (?confirm=%s)", id, pending, why, id)
	}
	pb := problem.New(problem.CodeDeleteUnconfirmed, detail)
	pb.Erases, _ = json.Marshal(c)
	return pb
}

func busy(id string, pending int64) error {
	return problem.New(problem.CodeFormBusy, fmt.Sprintf("form %s is closed now, but the journal still holds %d of its entries not yet decided: try again in a moment", id, pending))
}

// Detail is the audit log's note of what went.
func (d FormDeletion) Detail() string {
	s := "erased " + d.Erased.Summary()
	if d.JournalKept {
		s += "; the journal cannot delete its copies: they stay until its own limits remove them"
	}
	return s
}

// changeSummary is what a set changes, in words, per record: the note a
// version keeps.
func (h *Handler) changeSummary(set form.Set) map[string]string {
	out := map[string]string{}
	for _, f := range set.Forms {
		lines := form.Compare(h.Forms.Get(f.ID()), f).Lines()
		if len(lines) == 0 {
			lines = []string{"labels, texts or rules other than fields, places and uniqueness changed"}
		}
		out[f.ID()] = strings.Join(lines, "; ")
	}
	return out
}

// ---- the routes ----

func (h *Handler) registerBuild(mux Mux) {
	mux.Handle("POST /v1/admin/forms", h.route(accounts.EditForms, false, h.createFormJSON))
	mux.Handle("POST /v1/admin/forms/plan", h.route(accounts.EditForms, false, h.planJSONRoute))
	mux.Handle("GET /v1/admin/forms/{form}/versions", h.route(accounts.Read, true, h.versionsJSON))
	mux.Handle("GET /v1/admin/forms/{form}/versions/{n}", h.route(accounts.Read, true, h.versionSource))
	mux.Handle("POST /v1/admin/forms/{form}/versions/{n}/rollback", h.route(accounts.EditForms, true, h.rollbackJSON))
	mux.Handle("POST /v1/admin/forms/{form}/duplicate", h.route(accounts.EditForms, true, h.duplicateJSON))
	mux.Handle("POST /v1/admin/forms/{form}/archive", h.route(accounts.EditForms, true, h.archiveJSON(true)))
	mux.Handle("POST /v1/admin/forms/{form}/unarchive", h.route(accounts.EditForms, true, h.archiveJSON(false)))
	mux.Handle("DELETE /v1/admin/forms/{form}", h.route(accounts.EditForms, true, h.deleteJSON))
}

func (h *Handler) deleteJSON(w http.ResponseWriter, r *http.Request, c call) error {
	d, err := h.DeleteForm(r.Context(), c.p, c.form, r.URL.Query().Get("confirm"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": c.form.ID(), "deleted": true, "erased": d.Erased, "journal_kept": d.JournalKept})
}

func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
}

func (h *Handler) createFormJSON(w http.ResponseWriter, r *http.Request, c call) error {
	raw, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	f, err := h.CreateForm(r.Context(), c.p, raw, "form.create")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, map[string]any{"id": f.ID(), "site": f.Def.Site})
}

func (h *Handler) planJSONRoute(w http.ResponseWriter, r *http.Request, c call) error {
	raw, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	pj, err := h.PlanDefinitions(r.Context(), c.p, raw)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, pj)
}

type versionJSON struct {
	N       int    `json:"n"`
	SavedAt string `json:"saved_at"`
	By      string `json:"by"`
	Action  string `json:"action"`
	Summary string `json:"summary"`
}

func (h *Handler) versionsJSON(w http.ResponseWriter, r *http.Request, c call) error {
	vs, err := h.Versions(r.Context(), c.form)
	if err != nil {
		return err
	}
	out := []versionJSON{}
	for _, v := range vs {
		out = append(out, versionJSON{N: v.N, SavedAt: v.SavedAt.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), By: v.By, Action: v.Action, Summary: v.Summary})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"form": c.form.ID(), "versions": out})
}

func versionNumber(r *http.Request) (int, error) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		return 0, problem.New(problem.CodeVersionNotFound, "a version is a number from 1")
	}
	return n, nil
}

func (h *Handler) versionSource(w http.ResponseWriter, r *http.Request, c call) error {
	n, err := versionNumber(r)
	if err != nil {
		return err
	}
	v, err := h.Version(r.Context(), c.p, c.form, n)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write(v.Source)
	return err
}

func (h *Handler) rollbackJSON(w http.ResponseWriter, r *http.Request, c call) error {
	n, err := versionNumber(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pj, applied, err := h.Rollback(r.Context(), c.p, c.form, n, q.Get("confirm"), q.Get("dry_run") == "true")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"applied": applied, "plan": pj})
}

func (h *Handler) duplicateJSON(w http.ResponseWriter, r *http.Request, c call) error {
	var in struct {
		ID    string `json:"id"`
		Title any    `json:"title"`
	}
	bad := problem.New(problem.CodeInvalidRequest, `the body is JSON: {"id": "the copy's id", "title": "a title" or {"en": …, "zh": …}}`)
	if err := decodeJSON(w, r, &in); err != nil || in.ID == "" {
		return bad
	}
	var title form.Text
	switch t := in.Title.(type) {
	case nil:
	case string:
		title = form.Text{"": t}
	case map[string]any:
		title = form.Text{}
		for k, v := range t {
			s, ok := v.(string)
			if !ok {
				return bad
			}
			title[k] = s
		}
	default:
		return bad
	}
	f, err := h.Duplicate(r.Context(), c.p, c.form, in.ID, title)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, map[string]any{"id": f.ID(), "site": f.Def.Site})
}

func (h *Handler) archiveJSON(archive bool) func(http.ResponseWriter, *http.Request, call) error {
	return func(w http.ResponseWriter, r *http.Request, c call) error {
		if err := h.Archive(r.Context(), c.p, c.form, archive); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"id": c.form.ID(), "archived": archive})
	}
}

// BuildTarget finds what the builder edits under an id: the published
// form, its draft, or both (a new form has only a draft). Outside the
// principal's sites it is not found; beyond its role, forbidden.
func (h *Handler) BuildTarget(ctx context.Context, p accounts.Principal, id string) (*form.Form, store.FormDraft, bool, error) {
	f := h.Forms.Get(id)
	if f != nil {
		if _, err := h.Authorize(p, id, accounts.EditForms); err != nil {
			return nil, store.FormDraft{}, false, err
		}
	}
	d, ok, err := h.Store.FormDraft(ctx, id)
	if err != nil {
		return nil, store.FormDraft{}, false, err
	}
	if f == nil {
		if !ok || !p.Can(accounts.Read, d.Site) {
			return nil, store.FormDraft{}, false, problem.New(problem.CodeFormNotFound, "")
		}
		if !p.Can(accounts.EditForms, d.Site) {
			return nil, store.FormDraft{}, false, accounts.ErrForbidden
		}
	}
	return f, d, ok, nil
}

// Drafts are the drafts of new forms (no published form of their id)
// on the sites the principal may build on.
func (h *Handler) Drafts(ctx context.Context, p accounts.Principal) ([]store.FormDraft, error) {
	all, err := h.Store.FormDrafts(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.FormDraft
	for _, d := range all {
		if h.Forms.Get(d.Form) == nil && p.Can(accounts.EditForms, d.Site) {
			out = append(out, d)
		}
	}
	return out, nil
}

// SaveDraft keeps the builder's definition of a form until it is
// published: the principal must be able to build on the form's present
// site and on the draft's.
func (h *Handler) SaveDraft(ctx context.Context, p accounts.Principal, id, site string, src []byte) error {
	if f := h.Forms.Get(id); f != nil {
		if _, err := h.Authorize(p, id, accounts.EditForms); err != nil {
			return err
		}
	} else if d, ok, err := h.Store.FormDraft(ctx, id); err != nil {
		return err
	} else if ok && !p.Can(accounts.EditForms, d.Site) {
		return problem.New(problem.CodeFormNotFound, "")
	}
	if !p.Can(accounts.EditForms, site) {
		return fmt.Errorf("site %s: %w", site, accounts.ErrForbidden)
	}
	return h.Store.PutFormDraft(ctx, store.FormDraft{Form: id, Site: site, Source: src, SavedAt: h.Now(), By: p.String()})
}

// DiscardDraft throws a draft away.
func (h *Handler) DiscardDraft(ctx context.Context, p accounts.Principal, id string) error {
	if _, _, _, err := h.BuildTarget(ctx, p, id); err != nil {
		return err
	}
	return h.Store.DeleteFormDraft(ctx, id)
}

// Publish publishes the builder's definition of a form through the one
// path: checked as forms apply checks it, planned, and when the change
// reaches entries already collected, applied only with the plan's token
// (confirmation-required, the plan returned). A new form is created
// (form.create), an existing one changed (form.publish); the draft goes.
func (h *Handler) Publish(ctx context.Context, p accounts.Principal, id string, raw []byte, confirm string) (PlanJSON, error) {
	restored, set, err := h.CheckDefinitions(p, raw)
	if err != nil {
		return PlanJSON{}, err
	}
	if len(set.Forms) != 1 || len(set.Sites) != 0 || set.Forms[0].ID() != id {
		return PlanJSON{}, problem.New(problem.CodeInvalidDefinition, fmt.Sprintf("the definition must be the one form %s", id))
	}
	old := h.Forms.Get(id)
	action := "form.publish"
	if old == nil {
		action = "form.create"
		if err := h.checkFree(ctx, id); err != nil {
			return PlanJSON{}, err
		}
	}
	plan, err := h.PlanAgainst(ctx, set)
	if err != nil {
		return PlanJSON{}, err
	}
	pj := planJSON(plan, restored)
	if len(plan.Risks) > 0 && confirm != pj.Confirm {
		return pj, confirmationRequired(pj)
	}
	if _, err := h.putForms(ctx, call{p: p, form: old}, set, action); err != nil {
		return pj, err
	}
	return pj, h.Store.DeleteFormDraft(ctx, id)
}
