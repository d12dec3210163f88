-- Why intake classed a submission as spam (issue 22), for the console:
-- one row per (form, key), noted_at in Unix microseconds.
CREATE TABLE spam_reasons (
	form     TEXT    NOT NULL,
	key      TEXT    NOT NULL,
	reason   TEXT    NOT NULL,
	noted_at INTEGER NOT NULL,
	PRIMARY KEY (form, key)
) WITHOUT ROWID;
CREATE INDEX spam_reasons_noted ON spam_reasons(noted_at);
