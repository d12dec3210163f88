-- One-time password reset links an owner makes for another account
-- (package accounts, ResetLink): the hash of the link's code, never the
-- code. Using one deletes it, with the account's other links.
CREATE TABLE password_resets (
	hash       bytea PRIMARY KEY,
	account_id text        NOT NULL REFERENCES accounts(id),
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX password_resets_account ON password_resets(account_id);
