-- Check-in at the door (issue 35). checkins holds each entry's first
-- check-in: its primary key is the rule that an entry is let in once,
-- whoever scans it first at whichever door. Undoing a check-in deletes
-- the row (the audit log keeps who did it). checkin_scans holds every
-- scan by its idempotency key with the answer it got, so that a scan sent
-- again (the door's outbox retrying) gets its first answer again.
CREATE TABLE checkins (
	entry_id   TEXT PRIMARY KEY,
	form       TEXT    NOT NULL,
	door       TEXT    NOT NULL,
	scanned_at INTEGER NOT NULL, -- Unix microseconds, the door's clock
	at         INTEGER NOT NULL, -- Unix microseconds, when it was decided
	scan_key   TEXT    NOT NULL
);
CREATE INDEX checkins_form ON checkins(form);

CREATE TABLE checkin_scans (
	form       TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	entry_id   TEXT    NOT NULL,
	result     TEXT    NOT NULL, -- checked_in | already_checked_in | not_valid_now
	status     TEXT    NOT NULL, -- the entry's status when scanned
	door       TEXT    NOT NULL, -- the first check-in's door (this scan's for checked_in)
	first_at   INTEGER NOT NULL, -- the first check-in's time; 0 for not_valid_now
	door_sent  TEXT    NOT NULL, -- the door this scan named
	scanned_at INTEGER NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (form, key)
) WITHOUT ROWID;
