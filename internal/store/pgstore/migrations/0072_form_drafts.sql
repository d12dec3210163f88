-- A form's definition as the console's builder last saved it, not yet
-- published (issue 31): one per form, kept until published or discarded.
CREATE TABLE form_drafts (
	form     text        PRIMARY KEY,
	site     text        NOT NULL,
	source   bytea       NOT NULL,
	saved_at timestamptz NOT NULL,
	by       text        NOT NULL
);
