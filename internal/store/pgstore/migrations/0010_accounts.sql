-- Accounts of the owner's console, their API tokens and browser sessions,
-- the one-time setup code, sign-in attempt counts and the audit log (see
-- package accounts), shared by every instance. The legacy tokens table
-- (the admin token) stays as it is.
CREATE TABLE accounts (
	id            text PRIMARY KEY,
	email         text        NOT NULL, -- normalized by package accounts
	name          text        NOT NULL,
	role          text        NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
	sites         text[]      NOT NULL, -- {*} is every site
	password_hash text        NOT NULL, -- argon2id PHC string
	disabled      boolean     NOT NULL DEFAULT false,
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL
);
-- One account per e-mail: the index decides, also between concurrent adds.
CREATE UNIQUE INDEX accounts_email ON accounts(email);

CREATE TABLE api_tokens (
	id           text PRIMARY KEY,
	account_id   text        NOT NULL REFERENCES accounts(id),
	name         text        NOT NULL,
	hash         bytea       NOT NULL, -- SHA-256 of the token, never the token
	created_at   timestamptz NOT NULL,
	last_used_at timestamptz,          -- NULL: never used
	revoked_at   timestamptz           -- NULL: live
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens(hash);
CREATE INDEX api_tokens_account ON api_tokens(account_id, created_at);

CREATE TABLE sessions (
	hash         bytea PRIMARY KEY, -- SHA-256 of the cookie, never the cookie
	account_id   text        NOT NULL REFERENCES accounts(id),
	csrf         text        NOT NULL,
	created_at   timestamptz NOT NULL,
	last_seen_at timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL  -- the sooner of the idle and the absolute limit
);
CREATE INDEX sessions_account ON sessions(account_id);
CREATE INDEX sessions_expires ON sessions(expires_at);

-- At most one setup code: the row with one = 1, replaced at each start.
-- Using it deletes the row, whose lock makes concurrent uses wait and
-- then find it gone.
CREATE TABLE setup_codes (
	one        integer PRIMARY KEY CHECK (one = 1),
	hash       bytea       NOT NULL,
	expires_at timestamptz NOT NULL
);

-- Sign-in attempts per key ('ip:…' or 'email:…') in the window that began
-- at since; counted by one upsert each, so concurrent attempts all count.
CREATE TABLE login_attempts (
	key      text PRIMARY KEY,
	attempts integer     NOT NULL,
	since    timestamptz NOT NULL
);
CREATE INDEX login_attempts_since ON login_attempts(since);

-- The audit log: id orders it (newest first is id descending) and is the
-- paging cursor.
CREATE TABLE audit_log (
	id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at     timestamptz NOT NULL,
	actor  text        NOT NULL,
	action text        NOT NULL,
	site   text        NOT NULL,
	form   text        NOT NULL,
	target text        NOT NULL,
	detail text        NOT NULL
);
CREATE INDEX audit_log_site ON audit_log(site, id);
CREATE INDEX audit_log_form ON audit_log(form, id);
