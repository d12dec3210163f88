-- A participant's change of their entry (issue 33 item 3): entries are
-- numbered (version 1 when decided, one more at each change, for
-- If-Match), and each version a change replaces is kept for the
-- organizer in entry_versions until the entry is erased.
ALTER TABLE entries ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
CREATE TABLE entry_versions (
	entry_id    TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	data        BLOB    NOT NULL,
	place       TEXT,
	replaced_at INTEGER NOT NULL,
	PRIMARY KEY (entry_id, version)
) WITHOUT ROWID;
