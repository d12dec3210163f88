-- The owner's console: counts by status and the status filter use
-- (form, status, seq); the entries-per-minute chart and the time filter
-- use (form, received_at), for entries with data or without.
CREATE INDEX entries_form_status ON entries(form, status, seq);
CREATE INDEX entries_form_received ON entries(form, received_at);
