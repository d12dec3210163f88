-- Drafts (issue 33): a participant's unsent answers, saved under the
-- submission's own key until the submission's decision consumes them or
-- they expire. The resume token is kept only as its hash; version counts
-- the saves, for If-Match. Drafts hold no place and no claim.
CREATE TABLE drafts (
	form       TEXT NOT NULL,
	key        TEXT NOT NULL,
	site       TEXT NOT NULL,
	token_hash BLOB NOT NULL UNIQUE,
	version    INTEGER NOT NULL,
	data       BLOB NOT NULL,
	saved_at   INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (form, key)
);
CREATE INDEX drafts_expiry ON drafts(expires_at);
