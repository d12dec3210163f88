-- Arrival reports refused (issue 17), counted by form and hour (Unix
-- microseconds of its start) for the proof page; pruned with the reports.
CREATE TABLE arrival_refusals (
	form TEXT    NOT NULL,
	hour INTEGER NOT NULL,
	n    INTEGER NOT NULL,
	PRIMARY KEY (form, hour)
) WITHOUT ROWID;
