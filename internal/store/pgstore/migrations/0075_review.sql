-- Review before it counts (issue 32): a form with review decides the
-- entries that take their places as pending, until an editor approves
-- (stored) or declines (declined) each.
ALTER TABLE capacity ADD COLUMN review boolean NOT NULL DEFAULT false;
