-- The promise at its edges: a resend of a live entry's content under a new
-- key is answered as that entry (same_as), and small settings such as the
-- check value of the installation's secret are kept by name.
-- The admin token is issued again at each start until it is first used,
-- so a token printed to a terminal nobody read is never the only way in.
ALTER TABLE tokens ADD COLUMN used_at INTEGER;

ALTER TABLE entries ADD COLUMN same_as TEXT;

CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
