-- Every definition a form (or a site's settings, @site) has been published
-- with (issue 31): the console's version history and rollback. n counts
-- from 1 per form; saved_at in Unix microseconds; by is the principal
-- ("" for formd forms apply on the store's files); action is the audit
-- log's (forms.apply, form.create, form.rollback, …); summary the change
-- in words. The definitions stored today are each's first version.
CREATE TABLE form_versions (
	form     TEXT    NOT NULL,
	n        INTEGER NOT NULL,
	site     TEXT    NOT NULL,
	source   BLOB    NOT NULL,
	saved_at INTEGER NOT NULL,
	by       TEXT    NOT NULL,
	action   TEXT    NOT NULL,
	summary  TEXT    NOT NULL,
	PRIMARY KEY (form, n)
) WITHOUT ROWID;
INSERT INTO form_versions(form, n, site, source, saved_at, by, action, summary)
	SELECT id, 1, site, source, updated_at, '', 'upgrade', '' FROM forms;

-- Archived forms: closed, left out of the forms list by default, their
-- entries kept under the form's retention.
CREATE TABLE form_archive (
	form        TEXT PRIMARY KEY,
	archived_at INTEGER NOT NULL,
	by          TEXT    NOT NULL
) WITHOUT ROWID;
