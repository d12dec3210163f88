-- Options with places of their own (issue 32): a select field's options
-- may each carry a capacity, decided like the form's by a guarded update
-- in the entry's transaction.
--   capacity.place_field: the field whose options have places (NULL: none).
--   option_places: one row per option of that field; capacity NULL for an
--     option without a limit of its own; taken counts the stored entries
--     holding the option's place (it may exceed capacity only when the
--     owner lowers it).
--   entries.place: the option whose place the entry holds or waits for
--     (stored, waitlisted), or the full option that turned it away
--     (rejected); NULL otherwise.
ALTER TABLE capacity ADD COLUMN place_field TEXT;
CREATE TABLE option_places (
	form     TEXT    NOT NULL,
	value    TEXT    NOT NULL,
	capacity INTEGER,
	taken    INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (form, value)
) WITHOUT ROWID;
ALTER TABLE entries ADD COLUMN place TEXT;
