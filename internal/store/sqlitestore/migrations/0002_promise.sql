-- The promise at its edges: a resend of a live entry's content under a new
-- key is answered as that entry (same_as), and small settings such as the
-- check value of the installation's secret are kept by name.
ALTER TABLE entries ADD COLUMN same_as TEXT;

CREATE TABLE settings (
	name  TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
