-- Deliveries: the outbox. Each decision that makes or changes an entry
-- writes an event in the same transaction (an entry's history, and what
-- webhooks and e-mail deliver); the dispatcher fans each event out to the
-- form's endpoints as deliveries, sent at least once with retries.
CREATE TABLE events (
	seq      INTEGER PRIMARY KEY,   -- fan-out order
	entry_id TEXT    NOT NULL,
	n        INTEGER NOT NULL,      -- the how-manieth event of this type for the entry (1 almost always)
	type     TEXT    NOT NULL,      -- submission.stored, .waitlisted, .promoted, .cancelled, .spam
	form     TEXT    NOT NULL,
	site     TEXT    NOT NULL,
	status   TEXT    NOT NULL,      -- the entry's status after the event
	at       INTEGER NOT NULL,      -- Unix microseconds
	fanned   INTEGER NOT NULL DEFAULT 0, -- 1 once its deliveries are added
	UNIQUE (entry_id, type, n)
);
CREATE INDEX events_form ON events(form, seq);
CREATE INDEX events_unfanned ON events(seq) WHERE fanned = 0;

-- One row per (event, endpoint): its state and next attempt. An endpoint
-- is a webhook URL or an e-mail recipient kind of the form or its site.
CREATE TABLE deliveries (
	event_seq   INTEGER NOT NULL,
	endpoint    TEXT    NOT NULL,   -- webhook:<hash> | email:owner | email:confirm
	form        TEXT    NOT NULL,
	site        TEXT    NOT NULL,
	state       TEXT    NOT NULL,   -- pending | delivered | failed | skipped
	attempts    INTEGER NOT NULL DEFAULT 0,
	next_at     INTEGER NOT NULL,   -- when it may be tried (Unix microseconds)
	lease_until INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT    NOT NULL DEFAULT '',
	last_status INTEGER NOT NULL DEFAULT 0,
	last_error  TEXT    NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (event_seq, endpoint)
) WITHOUT ROWID;
CREATE INDEX deliveries_due ON deliveries(next_at) WHERE state = 'pending';
CREATE INDEX deliveries_form ON deliveries(form, state, updated_at);

-- Every attempt, for the delivery log.
CREATE TABLE delivery_attempts (
	event_seq  INTEGER NOT NULL,
	endpoint   TEXT    NOT NULL,
	at         INTEGER NOT NULL,
	status     INTEGER NOT NULL,    -- HTTP status or SMTP reply code; 0 without an answer
	latency_us INTEGER NOT NULL,
	outcome    TEXT    NOT NULL,    -- delivered | retry | gone | refused
	excerpt    TEXT    NOT NULL
);
CREATE INDEX delivery_attempts_event ON delivery_attempts(event_seq, endpoint, at);

-- Endpoints switched off: a 410 Gone, or the owner.
CREATE TABLE endpoints_disabled (
	endpoint TEXT PRIMARY KEY,
	form     TEXT    NOT NULL,
	reason   TEXT    NOT NULL,
	at       INTEGER NOT NULL
);

-- What devices say about each key: when the person pressed send and when
-- the definitive answer came (the SDK's arrival beacons), so that the
-- console can show keys started and never received.
CREATE TABLE arrivals (
	form        TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	started_at  INTEGER,            -- device clock, Unix microseconds
	answered_at INTEGER,
	state       TEXT    NOT NULL DEFAULT '',
	reported_at INTEGER NOT NULL,   -- server clock of the first report
	PRIMARY KEY (form, key)
) WITHOUT ROWID;
CREATE INDEX arrivals_form ON arrivals(form, reported_at);
