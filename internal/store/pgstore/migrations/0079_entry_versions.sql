-- A participant's change of their entry (issue 33 item 3): entries are
-- numbered (version 1 when decided, one more at each change, for
-- If-Match), and each version a change replaces is kept for the
-- organizer in entry_versions until the entry is erased.
ALTER TABLE entries ADD COLUMN version integer NOT NULL DEFAULT 1;
CREATE TABLE entry_versions (
	entry_id    text        NOT NULL,
	version     integer     NOT NULL,
	data        bytea       NOT NULL,
	place       text,
	replaced_at timestamptz NOT NULL,
	PRIMARY KEY (entry_id, version)
);
