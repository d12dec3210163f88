-- Participants' requests that their entry's data be erased (issue 33
-- item 5): one per entry, pending until the entry is erased (done_at).
CREATE TABLE erasure_requests (
	entry_id     text        PRIMARY KEY,
	form         text        NOT NULL,
	requested_at timestamptz NOT NULL,
	done_at      timestamptz
);
CREATE INDEX erasure_requests_pending ON erasure_requests(form, requested_at) WHERE done_at IS NULL;
