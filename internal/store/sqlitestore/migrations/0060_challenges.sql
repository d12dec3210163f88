-- Proof-of-work replay store (issue 22): each solved challenge is spent
-- once. The signature is the challenge's identity; (form, key) is the
-- submission that spent it, so a retry of that key is not a replay.
-- expires is Unix microseconds; rows are pruned after it.
CREATE TABLE challenge_uses (
	signature TEXT    NOT NULL PRIMARY KEY,
	form      TEXT    NOT NULL,
	key       TEXT    NOT NULL,
	expires   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX challenge_uses_expires ON challenge_uses(expires);
