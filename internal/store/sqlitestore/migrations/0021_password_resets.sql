-- One-time password reset links an owner makes for another account
-- (package accounts, ResetLink): the hash of the link's code, never the
-- code. Using one deletes it, with the account's other links.
CREATE TABLE password_resets (
	hash       BLOB PRIMARY KEY,
	account_id TEXT    NOT NULL REFERENCES accounts(id),
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX password_resets_account ON password_resets(account_id);
