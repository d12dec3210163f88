-- Why intake classed a submission as spam (issue 22), for the console.
CREATE TABLE spam_reasons (
	form     text        NOT NULL,
	key      text        NOT NULL,
	reason   text        NOT NULL,
	noted_at timestamptz NOT NULL,
	PRIMARY KEY (form, key)
);
CREATE INDEX spam_reasons_noted ON spam_reasons(noted_at);
