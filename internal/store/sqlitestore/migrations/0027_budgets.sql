-- Budgets (issue 17): counts against limits that must hold across
-- instances, such as the confirmations sent to one address in an hour.
-- A row is one key's count in the window ending at until (Unix
-- microseconds); rows of ended windows are pruned.
CREATE TABLE budgets (
	key   TEXT    NOT NULL PRIMARY KEY,
	until INTEGER NOT NULL,
	n     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX budgets_until ON budgets(until);
