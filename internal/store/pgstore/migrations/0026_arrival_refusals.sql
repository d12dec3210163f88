-- Arrival reports refused (issue 17), counted by form and hour for the
-- proof page; pruned with the reports.
CREATE TABLE arrival_refusals (
	form text        NOT NULL,
	hour timestamptz NOT NULL,
	n    bigint      NOT NULL,
	PRIMARY KEY (form, hour)
);
