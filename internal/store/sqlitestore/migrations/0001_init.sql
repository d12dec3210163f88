-- The first schema of the embedded store.
CREATE TABLE entries (
	id          TEXT    NOT NULL,
	seq         INTEGER NOT NULL, -- journal position: arrival order
	form        TEXT    NOT NULL,
	site        TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	decision    TEXT    NOT NULL,
	received_at INTEGER NOT NULL, -- Unix microseconds
	decided_at  INTEGER NOT NULL,
	fingerprint BLOB    NOT NULL,
	claims      TEXT    NOT NULL,
	data        BLOB
);
CREATE UNIQUE INDEX entries_form_key ON entries(form, key);
CREATE UNIQUE INDEX entries_id ON entries(id);
CREATE INDEX entries_form_seq ON entries(form, seq);
CREATE INDEX entries_waitlist ON entries(form, seq) WHERE status = 'waitlisted';

-- One row per live participant: the primary key is the uniqueness rule.
CREATE TABLE claims (
	form     TEXT NOT NULL,
	claim    TEXT NOT NULL,
	entry_id TEXT NOT NULL,
	PRIMARY KEY (form, claim)
) WITHOUT ROWID;
CREATE INDEX claims_entry ON claims(entry_id);

-- Places per form; taken only moves through guarded updates.
CREATE TABLE capacity (
	form      TEXT PRIMARY KEY,
	capacity  INTEGER,            -- NULL: no limit
	when_full TEXT    NOT NULL,
	taken     INTEGER NOT NULL DEFAULT 0 -- may exceed capacity only when the owner lowers it
);

CREATE TABLE forms (
	id         TEXT PRIMARY KEY,
	site       TEXT    NOT NULL,
	source     BLOB    NOT NULL,
	version    INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);

CREATE TABLE dead_letters (
	entry_id TEXT PRIMARY KEY,
	form     TEXT    NOT NULL,
	key      TEXT    NOT NULL,
	seq      INTEGER NOT NULL,
	reason   TEXT    NOT NULL,
	attempts INTEGER NOT NULL,
	at       INTEGER NOT NULL
);

CREATE TABLE tokens (
	name       TEXT PRIMARY KEY,
	hash       BLOB    NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX tokens_hash ON tokens(hash);

CREATE TABLE meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO meta(k, v) VALUES ('forms_version', 0);
