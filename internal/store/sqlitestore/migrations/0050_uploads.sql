-- Uploads (a file field's bytes, sent before the submission) and their
-- claims: an upload belongs to at most one entry, the primary key of
-- upload_claims is that rule, and the decision of the entry inserts the
-- claim in its own transaction. Times are Unix microseconds.
CREATE TABLE uploads (
	id           TEXT    PRIMARY KEY,
	form         TEXT    NOT NULL,
	field        TEXT    NOT NULL,
	size         INTEGER NOT NULL,
	name         TEXT    NOT NULL DEFAULT '',
	type         TEXT    NOT NULL DEFAULT '',
	sha256       BLOB,              -- NULL until every byte is durable
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	completed_at INTEGER
);
CREATE INDEX uploads_expiry ON uploads(expires_at);

CREATE TABLE upload_claims (
	upload_id TEXT NOT NULL PRIMARY KEY REFERENCES uploads(id),
	entry_id  TEXT NOT NULL,
	form      TEXT NOT NULL,
	n         INTEGER NOT NULL      -- the upload's place in the entry's data
);
CREATE INDEX upload_claims_entry ON upload_claims(entry_id, n);
