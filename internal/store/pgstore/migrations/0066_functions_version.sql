-- functions_version records which version of functions.sql defined the
-- database's PL/pgSQL, and by which release, so that an older binary
-- starting beside a newer one (a rolling restart) uses the newer bodies
-- instead of putting its own back (dialect.ClaimFunctions).
CREATE TABLE functions_version (
	one integer PRIMARY KEY CHECK (one = 1),
	version integer NOT NULL,
	release text NOT NULL,
	at timestamptz NOT NULL
);
