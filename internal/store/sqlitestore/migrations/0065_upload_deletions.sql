-- upload_deletions is the queue of uploads whose bytes are to be deleted:
-- the transaction that removes an upload's record (its expiry, or the
-- erasure of the entry that claimed it) puts the upload here, so that a
-- stop between the record and the bytes leaves the deletion to the next
-- pass, and a deletion that fails is recorded here (attempts, last_error)
-- and tried again rather than only logged. Times are Unix microseconds.
CREATE TABLE upload_deletions (
	upload_id  TEXT    NOT NULL PRIMARY KEY,
	queued_at  INTEGER NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	last_error TEXT    NOT NULL DEFAULT '',
	tried_at   INTEGER
);
