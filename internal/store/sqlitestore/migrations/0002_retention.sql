-- Retention erases the data of old entries; this index finds the ones
-- still holding data, oldest first, without scanning the erased ones.
CREATE INDEX entries_retention ON entries(form, received_at) WHERE data IS NOT NULL;
