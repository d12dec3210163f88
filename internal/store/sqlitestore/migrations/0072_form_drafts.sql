-- A form's definition as the console's builder last saved it, not yet
-- published (issue 31): one per form, kept until published or discarded.
-- site is the draft's; saved_at in Unix microseconds; by the principal.
CREATE TABLE form_drafts (
	form     TEXT    PRIMARY KEY,
	site     TEXT    NOT NULL,
	source   BLOB    NOT NULL,
	saved_at INTEGER NOT NULL,
	by       TEXT    NOT NULL
) WITHOUT ROWID;
