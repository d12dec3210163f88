-- The participant's link (issue 33): an entry decided from now on is
-- answered with its link (member manage); one decided before was
-- answered without it, and every retry of its key must get that first
-- body byte-for-byte. linked says which: 0 for the entries already here,
-- 1 for every entry the decision inserts from now on.
ALTER TABLE entries ADD COLUMN linked INTEGER NOT NULL DEFAULT 0;
