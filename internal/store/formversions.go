package store

import (
	"context"
	"time"

	"github.com/formd/formd/internal/form"

	"github.com/formd/formd/internal/problem"
)

// ErrVersionNotFound means a form has no published version of that number.
var ErrVersionNotFound error = problem.Sentinel("form version not found", problem.CodeVersionNotFound)

// ErrFormExists means a new form's id is a form's already (PublishForms
// with FormNote.Create); nothing was published.
var ErrFormExists error = problem.Sentinel("a form with this id exists already", problem.CodeFormExists)

// FormHistory is the store's record of every definition a form has been
// published with, and of the forms archived: the console's version
// history, rollback and archive.
type FormHistory interface {
	// PublishForms is PutForms keeping each definition as its form's next
	// version with the note, in the same transaction.
	PublishForms(ctx context.Context, forms []form.Record, note FormNote) error
	// FormVersions lists a form's versions, the newest first, without
	// their definitions.
	FormVersions(ctx context.Context, form string) ([]FormVersion, error)
	// FormVersion reads one version with its definition;
	// ErrVersionNotFound when there is none of that number.
	FormVersion(ctx context.Context, form string, n int) (FormVersion, error)
	// SetArchive archives a form (nil: takes it out of the archive); an
	// archived form archived again keeps its first time.
	SetArchive(ctx context.Context, form string, a *Archive) error
	// Archives are the archived forms by id.
	Archives(ctx context.Context) (map[string]Archive, error)
	// PutFormDraft keeps a form's unpublished definition, replacing its last.
	PutFormDraft(ctx context.Context, d FormDraft) error
	// FormDraft reads a form's draft; false when it has none.
	FormDraft(ctx context.Context, form string) (FormDraft, bool, error)
	// FormDrafts lists every form's draft by form id, without their
	// definitions.
	FormDrafts(ctx context.Context) ([]FormDraft, error)
	// DeleteFormDraft discards a form's draft (published, or thrown away).
	DeleteFormDraft(ctx context.Context, form string) error
	// DeleteEmptyForm deletes a form that holds no entries and no dead
	// letters, with its places, versions, draft and archive, in one
	// transaction, leaving a tombstone (an empty definition under a new
	// forms version) so every instance's registry drops it. false, and
	// nothing deleted, when the form holds anything.
	DeleteEmptyForm(ctx context.Context, form string) (bool, error)
}

// FormTombstone and FormGoneStatements are what DeleteEmptyForm runs
// after its check, in the dialect's placeholders: the tombstone (1: the
// form, 2: the new forms version, 3: the time), then the form's other
// rows (1: the form).
func FormTombstone(ph func(n int) string) string {
	return `UPDATE forms SET source = ` + EmptySource + `, version = ` + ph(2) + `, updated_at = ` + ph(3) + ` WHERE id = ` + ph(1)
}

// FormGoneStatements: see FormTombstone.
func FormGoneStatements(ph func(n int) string) []string {
	return []string{
		`DELETE FROM option_places WHERE form = ` + ph(1),
		`DELETE FROM capacity WHERE form = ` + ph(1),
		`DELETE FROM form_versions WHERE form = ` + ph(1),
		`DELETE FROM form_drafts WHERE form = ` + ph(1),
		`DELETE FROM form_archive WHERE form = ` + ph(1),
	}
}

// EmptySource is the tombstone's definition: no bytes.
const EmptySource = `''`

// FormHoldsQuery says whether a form holds entries or dead letters.
func FormHoldsQuery(ph func(n int) string) string {
	return `SELECT EXISTS(SELECT 1 FROM entries WHERE form = ` + ph(1) + `) OR EXISTS(SELECT 1 FROM dead_letters WHERE form = ` + ph(1) + `)`
}

// FormDraft is a form's definition as the builder last saved it, not yet
// published.
type FormDraft struct {
	Form, Site string
	Source     []byte
	SavedAt    time.Time
	By         string
}

// FormDraftColumns are what ScanFormDraft reads, of form_drafts d;
// FormDraftListColumns the same with an empty source.
const (
	FormDraftColumns     = `d.form, d.site, d.source, d.saved_at, d.by`
	FormDraftListColumns = `d.form, d.site, NULL, d.saved_at, d.by`
)

// ScanFormDraft reads FormDraftColumns.
func ScanFormDraft(sc Scanner) (FormDraft, error) {
	var d FormDraft
	err := sc.Scan(&d.Form, &d.Site, &d.Source, TimeDest(&d.SavedAt), &d.By)
	return d, err
}

// FormNote says who publishes definitions, by which action and what each
// changes; the store keeps it with every definition's version (PublishForms),
// in the same transaction as the definition.
type FormNote struct {
	// By is the principal ("" for formd forms apply on the store itself).
	By string
	// Action is the audit log's: forms.apply, form.create, form.rollback, …
	Action string
	// Summary is each record's change in words, by record id.
	Summary map[string]string
	// Create says each record is a new form: its id is claimed in the
	// database (a deleted form's tombstone may be reused), and a form
	// holding it already fails the whole with ErrFormExists.
	Create bool
}

// ClaimFormID is both drivers' statement claiming a new form's id, in the
// dialect's placeholders (1: id, 2: site, 3: source, 4: version, 5: time):
// it inserts, or takes over a deleted form's tombstone, and changes no row
// when a form has the id.
func ClaimFormID(ph func(n int) string) string {
	return `INSERT INTO forms(id, site, source, version, updated_at) VALUES (` + ph(1) + `, ` + ph(2) + `, ` + ph(3) + `, ` + ph(4) + `, ` + ph(5) + `)
		ON CONFLICT (id) DO UPDATE SET site = excluded.site, source = excluded.source, version = excluded.version, updated_at = excluded.updated_at
		WHERE length(forms.source) = 0`
}

// FormVersion is one published definition of a form: its number (from 1),
// its YAML and the note it was published with.
type FormVersion struct {
	Form    string
	N       int
	Site    string
	Source  []byte
	SavedAt time.Time
	By      string
	Action  string
	Summary string
}

// Archive is when and by whom a form was archived.
type Archive struct {
	At time.Time
	By string
}

// ActionOr is the note's action, forms.apply when it names none.
func (n FormNote) ActionOr() string {
	if n.Action == "" {
		return "forms.apply"
	}
	return n.Action
}

// InsertFormVersion is both drivers' statement adding a form's next
// version, in the dialect's placeholders: form (twice: the row's and the
// one whose versions are counted), site, source, saved_at, by, action,
// summary. The number is the form's highest plus one, read in the
// publishing transaction, which the forms version counter serializes;
// the primary key refuses a duplicate should two ever race.
func InsertFormVersion(form, countForm, site, source, savedAt, by, action, summary string) string {
	return `INSERT INTO form_versions(form, n, site, source, saved_at, by, action, summary)
		VALUES (` + form + `, (SELECT COALESCE(MAX(n), 0) + 1 FROM form_versions WHERE form = ` + countForm + `), ` +
		site + `, ` + source + `, ` + savedAt + `, ` + by + `, ` + action + `, ` + summary + `)`
}

// FormVersionColumns are what ScanFormVersion reads, of form_versions v;
// FormVersionListColumns the same with an empty source, for a list.
const (
	FormVersionColumns     = `v.form, v.n, v.site, v.source, v.saved_at, v.by, v.action, v.summary`
	FormVersionListColumns = `v.form, v.n, v.site, NULL, v.saved_at, v.by, v.action, v.summary`
)

// ScanFormVersion reads FormVersionColumns.
func ScanFormVersion(sc Scanner) (FormVersion, error) {
	var v FormVersion
	err := sc.Scan(&v.Form, &v.N, &v.Site, &v.Source, TimeDest(&v.SavedAt), &v.By, &v.Action, &v.Summary)
	return v, err
}

// ScanArchive reads a form_archive row: form, archived_at, by.
func ScanArchive(sc Scanner) (string, Archive, error) {
	var id string
	var a Archive
	err := sc.Scan(&id, TimeDest(&a.At), &a.By)
	return id, a, err
}
