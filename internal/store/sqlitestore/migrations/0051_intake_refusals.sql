-- Submissions refused at intake before anything was kept (issue 21 item
-- 6): the form closed, values to fix. Counted by form, hour (Unix
-- microseconds of its start) and reason, for the console's tiles.
CREATE TABLE intake_refusals (
	form   TEXT    NOT NULL,
	hour   INTEGER NOT NULL,
	reason TEXT    NOT NULL,
	n      INTEGER NOT NULL,
	PRIMARY KEY (form, hour, reason)
) WITHOUT ROWID;
