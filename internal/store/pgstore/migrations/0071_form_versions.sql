-- Every definition a form (or a site's settings, @site) has been published
-- with (issue 31): the console's version history and rollback. n counts
-- from 1 per form; by is the principal ("" for formd forms apply on the
-- store); action is the audit log's; summary the change in words. The
-- definitions stored today are each's first version.
CREATE TABLE form_versions (
	form     text        NOT NULL,
	n        integer     NOT NULL,
	site     text        NOT NULL,
	source   bytea       NOT NULL,
	saved_at timestamptz NOT NULL,
	by       text        NOT NULL,
	action   text        NOT NULL,
	summary  text        NOT NULL,
	PRIMARY KEY (form, n)
);
INSERT INTO form_versions(form, n, site, source, saved_at, by, action, summary)
	SELECT id, 1, site, source, updated_at, '', 'upgrade', '' FROM forms;

-- Archived forms: closed, left out of the forms list by default, their
-- entries kept under the form's retention.
CREATE TABLE form_archive (
	form        text PRIMARY KEY,
	archived_at timestamptz NOT NULL,
	by          text        NOT NULL
);
