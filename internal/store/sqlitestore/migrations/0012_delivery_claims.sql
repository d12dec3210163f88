-- Claims read the due deliveries endpoint by endpoint (the endpoints by a
-- loose scan, then each one's oldest), so that a claim costs what it
-- takes, not the length of the backlog. The old index by due time alone
-- served the scan of the whole backlog it replaces.
CREATE INDEX deliveries_pending ON deliveries(endpoint, next_at) WHERE state = 'pending';
DROP INDEX deliveries_due;
