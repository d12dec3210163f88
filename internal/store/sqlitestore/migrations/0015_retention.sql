-- Retention erases the data of old entries; this index finds the ones
-- still holding data, oldest first, without scanning the erased ones.
--
-- It was 0002_retention.sql, which shared version 2 with 0002_promise.sql:
-- whichever ran first recorded version 2 and the other was skipped, so
-- no database got this index. IF NOT EXISTS spares a database where it
-- ran.
CREATE INDEX IF NOT EXISTS entries_retention ON entries(form, received_at) WHERE data IS NOT NULL;
