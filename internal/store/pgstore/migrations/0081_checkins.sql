-- Check-in at the door (issue 35). checkins holds each entry's first
-- check-in: its primary key is the rule that an entry is let in once,
-- whoever scans it first at whichever door, on whichever instance (a
-- second insert waits for the first's transaction, then conflicts).
-- Undoing a check-in deletes the row (the audit log keeps who did it).
-- checkin_scans holds every scan by its idempotency key with the answer
-- it got, so that a scan sent again gets its first answer again.
CREATE TABLE checkins (
	entry_id   text        PRIMARY KEY,
	form       text        NOT NULL,
	door       text        NOT NULL,
	scanned_at timestamptz NOT NULL, -- the door's clock
	at         timestamptz NOT NULL, -- when it was decided
	scan_key   text        NOT NULL
);
CREATE INDEX checkins_form ON checkins(form);

CREATE TABLE checkin_scans (
	form       text        NOT NULL,
	key        text        NOT NULL,
	entry_id   text        NOT NULL,
	result     text        NOT NULL, -- checked_in | already_checked_in | not_valid_now
	status     text        NOT NULL, -- the entry's status when scanned
	door       text        NOT NULL, -- the first check-in's door (this scan's for checked_in)
	first_at   timestamptz,          -- the first check-in's time; NULL for not_valid_now
	door_sent  text        NOT NULL, -- the door this scan named
	scanned_at timestamptz NOT NULL,
	at         timestamptz NOT NULL,
	PRIMARY KEY (form, key)
);
