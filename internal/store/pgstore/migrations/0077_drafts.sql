-- Drafts (issue 33): a participant's unsent answers, saved under the
-- submission's own key until the submission's decision consumes them or
-- they expire. The resume token is kept only as its hash; version counts
-- the saves, for If-Match. Drafts hold no place and no claim.
CREATE TABLE drafts (
	form       text NOT NULL,
	key        text NOT NULL,
	site       text NOT NULL,
	token_hash bytea NOT NULL UNIQUE,
	version    bigint NOT NULL,
	data       bytea NOT NULL,
	saved_at   timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (form, key)
);
CREATE INDEX drafts_expiry ON drafts(expires_at);
