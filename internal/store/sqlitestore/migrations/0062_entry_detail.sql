-- What a refusal decided in the store names (issue 28): for an entry
-- refused for an upload, the upload's code and the field naming it
-- ("upload-incomplete:photo"), so that the first answer and every retry
-- name the field as intake's check did. NULL for every other decision.
ALTER TABLE entries ADD COLUMN detail TEXT;
