-- Options with places of their own (issue 32): a select field's options
-- may each carry a capacity, decided like the form's by a guarded update
-- in the entry's transaction (formd_take_place in functions.sql).
--   capacity.place_field: the field whose options have places (NULL: none).
--   option_places: one row per option of that field; capacity NULL for an
--     option without a limit of its own; taken counts the stored entries
--     holding the option's place (it may exceed capacity only when the
--     owner lowers it). Its row is locked after the form's capacity row,
--     always in that order.
--   entries.place: the option whose place the entry holds or waits for
--     (stored, waitlisted), or the full option that turned it away
--     (rejected); NULL otherwise.
ALTER TABLE capacity ADD COLUMN place_field text;
CREATE TABLE option_places (
	form     text    NOT NULL,
	value    text    NOT NULL,
	capacity integer,
	taken    integer NOT NULL DEFAULT 0,
	PRIMARY KEY (form, value)
);
ALTER TABLE entries ADD COLUMN place text;
