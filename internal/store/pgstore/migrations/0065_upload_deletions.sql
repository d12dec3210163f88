-- upload_deletions is the queue of uploads whose bytes are to be deleted:
-- the transaction that removes an upload's record (its expiry, or the
-- erasure of the entry that claimed it) puts the upload here, so that a
-- stop between the record and the bytes leaves the deletion to the next
-- pass, and a deletion that fails is recorded here (attempts, last_error)
-- and tried again rather than only logged.
CREATE TABLE upload_deletions (
	upload_id  text        NOT NULL PRIMARY KEY,
	queued_at  timestamptz NOT NULL,
	attempts   integer     NOT NULL DEFAULT 0,
	last_error text        NOT NULL DEFAULT '',
	tried_at   timestamptz
);
