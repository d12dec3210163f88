-- Review before it counts (issue 32): a form with review decides the
-- entries that take their places as pending (1: review), until an editor
-- approves (stored) or declines (declined) each.
ALTER TABLE capacity ADD COLUMN review INTEGER NOT NULL DEFAULT 0;
