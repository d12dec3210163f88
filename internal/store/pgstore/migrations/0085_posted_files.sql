-- A plain HTML post's files are recorded by the decision (DESIGN
-- invariant 12): formd_decide_entry takes their facts (p_posted, with a
-- default, so that a call of the earlier seventeen arguments still
-- resolves). functions.sql defines the new one; the old one goes.
DROP FUNCTION IF EXISTS formd_decide_entry(text, bigint, text, text, text, boolean, timestamptz, timestamptz, bytea,
	text[], bytea, text[], text[], text, timestamptz, boolean, text);
