-- Upload budgets (issue 30): the address an upload came from (an IPv4
-- address, an IPv6 /64), so that what the unclaimed uploads of one
-- address, and of one form, hold is counted in the store when a new one
-- is made. Uploads made before have no source ('') and count for their
-- form only.
ALTER TABLE uploads ADD COLUMN source TEXT NOT NULL DEFAULT '';
CREATE INDEX uploads_source ON uploads(source, expires_at);
CREATE INDEX uploads_form_expiry ON uploads(form, expires_at);
