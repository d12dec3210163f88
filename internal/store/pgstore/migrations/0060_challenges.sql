-- Proof-of-work replay store (issue 22): each solved challenge is spent
-- once, across every instance on this database. The signature is the
-- challenge's identity; (form, key) is the submission that spent it, so a
-- retry of that key is not a replay. Rows are pruned after expires.
CREATE TABLE challenge_uses (
	signature text        NOT NULL PRIMARY KEY,
	form      text        NOT NULL,
	key       text        NOT NULL,
	expires   timestamptz NOT NULL
);
CREATE INDEX challenge_uses_expires ON challenge_uses(expires);
