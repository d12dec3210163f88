-- Accounts of the owner's console, their API tokens and browser sessions,
-- the one-time setup code, sign-in attempt counts and the audit log (see
-- package accounts). Times are Unix microseconds. The legacy tokens table
-- (the admin token) stays as it is.
CREATE TABLE accounts (
	id            TEXT PRIMARY KEY,
	email         TEXT    NOT NULL, -- normalized by package accounts
	name          TEXT    NOT NULL,
	role          TEXT    NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
	sites         TEXT    NOT NULL, -- JSON array of site ids; ["*"] is every site
	password_hash TEXT    NOT NULL, -- argon2id PHC string
	disabled      INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
-- One account per e-mail: the index decides, also between concurrent adds.
CREATE UNIQUE INDEX accounts_email ON accounts(email);

CREATE TABLE api_tokens (
	id           TEXT PRIMARY KEY,
	account_id   TEXT    NOT NULL REFERENCES accounts(id),
	name         TEXT    NOT NULL,
	hash         BLOB    NOT NULL, -- SHA-256 of the token, never the token
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,          -- NULL: never used
	revoked_at   INTEGER           -- NULL: live
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens(hash);
CREATE INDEX api_tokens_account ON api_tokens(account_id, created_at);

CREATE TABLE sessions (
	hash         BLOB PRIMARY KEY, -- SHA-256 of the cookie, never the cookie
	account_id   TEXT    NOT NULL REFERENCES accounts(id),
	csrf         TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	last_seen_at INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL  -- the sooner of the idle and the absolute limit
) WITHOUT ROWID;
CREATE INDEX sessions_account ON sessions(account_id);
CREATE INDEX sessions_expires ON sessions(expires_at);

-- At most one setup code: the row with one = 1, replaced at each start.
CREATE TABLE setup_codes (
	one        INTEGER PRIMARY KEY CHECK (one = 1),
	hash       BLOB    NOT NULL,
	expires_at INTEGER NOT NULL
);

-- Sign-in attempts per key ('ip:…' or 'email:…') in the window that began
-- at since; counted by one upsert each, so concurrent attempts all count.
CREATE TABLE login_attempts (
	key      TEXT PRIMARY KEY,
	attempts INTEGER NOT NULL,
	since    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX login_attempts_since ON login_attempts(since);

-- The audit log: id orders it (newest first is id descending) and is the
-- paging cursor.
CREATE TABLE audit_log (
	id     INTEGER PRIMARY KEY AUTOINCREMENT,
	at     INTEGER NOT NULL,
	actor  TEXT    NOT NULL,
	action TEXT    NOT NULL,
	site   TEXT    NOT NULL,
	form   TEXT    NOT NULL,
	target TEXT    NOT NULL,
	detail TEXT    NOT NULL
);
CREATE INDEX audit_log_site ON audit_log(site, id);
CREATE INDEX audit_log_form ON audit_log(form, id);
