-- The release that last opened the store for writing (one row), so that
-- an older binary that refuses the file can say which release to run.
CREATE TABLE written_by (
	one     INTEGER PRIMARY KEY CHECK (one = 1),
	release TEXT    NOT NULL,
	schema  INTEGER NOT NULL,
	at      INTEGER NOT NULL
);
