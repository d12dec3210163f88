-- The participant's link (issue 33): an entry decided from now on is
-- answered with its link (member manage); one decided before was
-- answered without it, and every retry of its key must get that first
-- body byte-for-byte. linked says which: false for the entries already
-- here, true (the new default) for every entry inserted from now on.
ALTER TABLE entries ADD COLUMN linked boolean NOT NULL DEFAULT false;
ALTER TABLE entries ALTER COLUMN linked SET DEFAULT true;
