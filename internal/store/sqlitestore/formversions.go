package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/formd/formd/internal/store"
)

// FormVersions lists a form's published versions, the newest first,
// without their definitions.
func (s *Store) FormVersions(ctx context.Context, form string) ([]store.FormVersion, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.FormVersionListColumns+` FROM form_versions v WHERE v.form = ? ORDER BY v.n DESC`, form)
	if err != nil {
		return nil, classify("read form versions", err)
	}
	out, err := collect(rows, store.ScanFormVersion)
	if err != nil {
		return nil, classify("read form versions", err)
	}
	return out, nil
}

// FormVersion reads one published version of a form with its definition;
// store.ErrVersionNotFound when the form has no such version.
func (s *Store) FormVersion(ctx context.Context, form string, n int) (store.FormVersion, error) {
	v, err := store.ScanFormVersion(s.rdb.QueryRowContext(ctx, `SELECT `+store.FormVersionColumns+` FROM form_versions v WHERE v.form = ? AND v.n = ?`, form, n))
	if errors.Is(err, sql.ErrNoRows) {
		return v, store.ErrVersionNotFound
	}
	if err != nil {
		return v, classify("read form version", err)
	}
	return v, nil
}

// SetArchive archives a form (a nil a: takes it out of the archive).
func (s *Store) SetArchive(ctx context.Context, form string, a *store.Archive) error {
	var err error
	if a == nil {
		_, err = s.wdb.ExecContext(ctx, `DELETE FROM form_archive WHERE form = ?`, form)
	} else {
		_, err = s.wdb.ExecContext(ctx, `INSERT INTO form_archive(form, archived_at, by) VALUES (?, ?, ?)
			ON CONFLICT(form) DO NOTHING`, form, micro(a.At), a.By)
	}
	if err != nil {
		return classify("archive form "+form, err)
	}
	return nil
}

// Archives are the archived forms, by id.
func (s *Store) Archives(ctx context.Context) (map[string]store.Archive, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT form, archived_at, by FROM form_archive`)
	if err != nil {
		return nil, classify("read archived forms", err)
	}
	defer rows.Close()
	out := map[string]store.Archive{}
	for rows.Next() {
		id, a, err := store.ScanArchive(rows)
		if err != nil {
			return nil, classify("read archived forms", err)
		}
		out[id] = a
	}
	if err := rows.Err(); err != nil {
		return nil, classify("read archived forms", err)
	}
	return out, nil
}

// PutFormDraft keeps a form's unpublished definition, replacing its last.
func (s *Store) PutFormDraft(ctx context.Context, d store.FormDraft) error {
	if _, err := s.wdb.ExecContext(ctx, `INSERT INTO form_drafts(form, site, source, saved_at, by) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT(form) DO UPDATE SET site = excluded.site, source = excluded.source, saved_at = excluded.saved_at, by = excluded.by`,
		d.Form, d.Site, d.Source, micro(d.SavedAt), d.By); err != nil {
		return classify("put draft of "+d.Form, err)
	}
	return nil
}

// Draft reads a form's draft; false when it has none.
func (s *Store) FormDraft(ctx context.Context, form string) (store.FormDraft, bool, error) {
	d, err := store.ScanFormDraft(s.rdb.QueryRowContext(ctx, `SELECT `+store.FormDraftColumns+` FROM form_drafts d WHERE d.form = ?`, form))
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, classify("read draft of "+form, err)
	}
	return d, true, nil
}

// Drafts lists every draft by form id, without their definitions.
func (s *Store) FormDrafts(ctx context.Context) ([]store.FormDraft, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+store.FormDraftListColumns+` FROM form_drafts d ORDER BY d.form`)
	if err != nil {
		return nil, classify("read drafts", err)
	}
	out, err := collect(rows, store.ScanFormDraft)
	if err != nil {
		return nil, classify("read drafts", err)
	}
	return out, nil
}

// DeleteFormDraft discards a form's draft.
func (s *Store) DeleteFormDraft(ctx context.Context, form string) error {
	if _, err := s.wdb.ExecContext(ctx, `DELETE FROM form_drafts WHERE form = ?`, form); err != nil {
		return classify("delete draft of "+form, err)
	}
	return nil
}

// DeleteEmptyForm deletes a form that holds nothing (store.FormHistory).
func (s *Store) DeleteEmptyForm(ctx context.Context, form string) (bool, error) {
	ph := func(n int) string { return "?" + strconv.Itoa(n) }
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return false, classify("delete form: begin", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var holds bool
	if err := tx.QueryRowContext(ctx, store.FormHoldsQuery(ph), form).Scan(&holds); err != nil {
		return false, classify("delete form "+form+": look for entries", err)
	}
	if holds {
		return false, nil
	}
	var version int64
	if err := tx.QueryRowContext(ctx, `UPDATE meta SET v = v + 1 WHERE k = 'forms_version' RETURNING v`).Scan(&version); err != nil {
		return false, classify("delete form: version", err)
	}
	if _, err := tx.ExecContext(ctx, store.FormTombstone(ph), form, version, micro(s.now())); err != nil {
		return false, classify("delete form "+form, err)
	}
	for _, q := range store.FormGoneStatements(ph) {
		if _, err := tx.ExecContext(ctx, q, form); err != nil {
			return false, classify("delete form "+form, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, classify("delete form: commit", err)
	}
	return true, nil
}
