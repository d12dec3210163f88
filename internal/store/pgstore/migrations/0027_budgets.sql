-- Budgets (issue 17): counts against limits that must hold across
-- instances, such as the confirmations sent to one address in an hour.
-- A row is one key's count in the window ending at until; rows of ended
-- windows are pruned.
CREATE TABLE budgets (
	key   text        NOT NULL PRIMARY KEY,
	until timestamptz NOT NULL,
	n     integer     NOT NULL
);
CREATE INDEX budgets_until ON budgets(until);
