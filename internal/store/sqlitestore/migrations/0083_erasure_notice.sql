-- The "your data was erased" e-mail (issue 33): the erasure removes the
-- address the mail goes to, so the event it writes for the mail
-- (submission.erased) carries the address itself, and only until the
-- mail's delivery is finished (delivered, skipped or failed), when it is
-- set back to NULL. Every other event has NULL.
ALTER TABLE events ADD COLUMN notice_to TEXT;
-- The few events holding an address, for clearing them when done.
CREATE INDEX events_notice ON events(seq) WHERE notice_to IS NOT NULL;
