-- Sign-in attempts are slowed per (account, address) and budgeted per
-- address (package accounts, Login): keys 'pair:<e-mail> <address>',
-- 'ip:<address>' and 'setup:<address>'. A key's run of attempts starts
-- over after a pause of the login window; prev_at is the attempt before
-- the last (NULL for the first of a run), from which the backoff is
-- counted. The rows are transient, so the old table of fixed windows goes
-- whole.
DROP TABLE login_attempts;
CREATE TABLE login_attempts (
	key      text PRIMARY KEY,
	attempts integer     NOT NULL,
	since    timestamptz NOT NULL,
	last_at  timestamptz NOT NULL,
	prev_at  timestamptz
);
CREATE INDEX login_attempts_last ON login_attempts(last_at);
