-- The release that last opened the store for writing (one row), so that
-- an older binary that refuses the database can say which release to run.
CREATE TABLE written_by (
	one     integer     PRIMARY KEY CHECK (one = 1),
	release text        NOT NULL,
	schema  integer     NOT NULL,
	at      timestamptz NOT NULL
);
