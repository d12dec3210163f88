-- Submissions refused at intake before anything was kept (issue 21 item
-- 6): the form closed, values to fix. Counted by form, hour and reason,
-- for the console's tiles.
CREATE TABLE intake_refusals (
	form   text        NOT NULL,
	hour   timestamptz NOT NULL,
	reason text        NOT NULL,
	n      bigint      NOT NULL,
	PRIMARY KEY (form, hour, reason)
);
