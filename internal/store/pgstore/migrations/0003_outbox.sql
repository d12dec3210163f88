-- Deliveries: the outbox, as in the embedded store. Each decision that
-- makes or changes an entry writes an event in the same transaction (an
-- entry's history, and what webhooks and e-mail deliver); the dispatchers
-- of every instance fan each event out to the form's endpoints as
-- deliveries, claimed with leases (FOR UPDATE SKIP LOCKED) and sent at
-- least once with retries.
CREATE TABLE events (
	seq      bigserial   PRIMARY KEY, -- fan-out order
	entry_id text        NOT NULL,
	n        integer     NOT NULL,    -- the how-manieth event of this type for the entry (1 almost always)
	type     text        NOT NULL,    -- submission.stored, .waitlisted, .promoted, .cancelled, .spam
	form     text        NOT NULL,
	site     text        NOT NULL,
	status   text        NOT NULL,    -- the entry's status after the event
	at       timestamptz NOT NULL,
	fanned   boolean     NOT NULL DEFAULT false, -- once its deliveries are added
	UNIQUE (entry_id, type, n)
);
CREATE INDEX events_form ON events(form, seq);
CREATE INDEX events_unfanned ON events(seq) WHERE NOT fanned;

CREATE TABLE deliveries (
	event_seq   bigint      NOT NULL,
	endpoint    text        NOT NULL, -- webhook:<hash> | email:owner | email:confirm
	form        text        NOT NULL,
	site        text        NOT NULL,
	state       text        NOT NULL, -- pending | delivered | failed | skipped
	attempts    integer     NOT NULL DEFAULT 0,
	next_at     timestamptz NOT NULL,
	lease_until timestamptz NOT NULL DEFAULT '-infinity',
	lease_owner text        NOT NULL DEFAULT '',
	last_status integer     NOT NULL DEFAULT 0,
	last_error  text        NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	PRIMARY KEY (event_seq, endpoint)
);
CREATE INDEX deliveries_due ON deliveries(next_at) WHERE state = 'pending';
CREATE INDEX deliveries_form ON deliveries(form, state, updated_at);

CREATE TABLE delivery_attempts (
	event_seq  bigint      NOT NULL,
	endpoint   text        NOT NULL,
	at         timestamptz NOT NULL,
	status     integer     NOT NULL,  -- HTTP status or SMTP reply code; 0 without an answer
	latency_us bigint      NOT NULL,
	outcome    text        NOT NULL,  -- delivered | retry | gone | refused
	excerpt    text        NOT NULL
);
CREATE INDEX delivery_attempts_event ON delivery_attempts(event_seq, endpoint, at);

CREATE TABLE endpoints_disabled (
	endpoint text        PRIMARY KEY,
	form     text        NOT NULL,
	reason   text        NOT NULL,
	at       timestamptz NOT NULL
);

CREATE TABLE arrivals (
	form        text        NOT NULL,
	key         text        NOT NULL,
	started_at  timestamptz,          -- device clock
	answered_at timestamptz,
	state       text        NOT NULL DEFAULT '',
	reported_at timestamptz NOT NULL, -- server clock of the first report
	PRIMARY KEY (form, key)
);
CREATE INDEX arrivals_form ON arrivals(form, reported_at);

-- formd_event records an event of an entry: the next occurrence of its
-- type (1 unless the entry had one before).
CREATE FUNCTION formd_event(p_entry text, p_type text, p_form text, p_site text, p_status text, p_at timestamptz)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO events(entry_id, n, type, form, site, status, at)
	SELECT p_entry, coalesce(max(n), 0) + 1, p_type, p_form, p_site, p_status, p_at
	FROM events WHERE entry_id = p_entry AND type = p_type;
$$;

-- formd_place decides the participant and the place of an entry whose row
-- is in, as stored (see package store for the rules), and records the
-- event of the entry it makes: the decision of a new submission, and of a
-- submission an owner marks as not spam.
--   * each claim is an insert into claims' primary key; one that is held
--     makes the entry a duplicate (a resend, same_as, when the holder has
--     exactly its content), and the claims taken so far go again;
--   * a place is an UPDATE ... WHERE taken < capacity on the form's row,
--     whose row lock serializes instances and re-checks the guard after
--     the wait, so no two transactions take the last place.
CREATE FUNCTION formd_place(
	p_id text, p_form text, p_site text, p_claims text[], p_fingerprint bytea, p_at timestamptz,
	OUT o_status text, OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_claim text;
	v_n integer;
	v_when_full text;
	v_holder entries%ROWTYPE;
BEGIN
	FOREACH v_claim IN ARRAY coalesce(p_claims, '{}') LOOP
		INSERT INTO claims(form, claim, entry_id) VALUES (p_form, v_claim, p_id) ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			DELETE FROM claims WHERE entry_id = p_id;
			SELECT e.* INTO v_holder FROM claims c JOIN entries e ON e.id = c.entry_id WHERE c.form = p_form AND c.claim = v_claim;
			IF FOUND AND v_holder.fingerprint = p_fingerprint THEN
				o_same_id := v_holder.id; o_same_key := v_holder.key;
				o_same_decision := v_holder.decision; o_same_received_at := v_holder.received_at;
			END IF;
			UPDATE entries SET status = 'duplicate', decision = 'duplicate', same_as = o_same_id WHERE id = p_id;
			o_status := 'duplicate';
			RETURN;
		END IF;
	END LOOP;
	UPDATE capacity SET taken = taken + 1 WHERE form = p_form AND (capacity IS NULL OR taken < capacity);
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 1 THEN
		o_status := 'stored';
	ELSE
		SELECT when_full INTO v_when_full FROM capacity WHERE form = p_form;
		IF NOT FOUND THEN
			-- A form the store has no settings for has no limit.
			o_status := 'stored';
		ELSIF v_when_full = 'waitlist' THEN
			o_status := 'waitlisted';
		ELSE
			o_status := 'rejected';
			DELETE FROM claims WHERE entry_id = p_id;
		END IF;
	END IF;
	UPDATE entries SET status = o_status, decision = o_status WHERE id = p_id;
	IF o_status <> 'rejected' THEN
		PERFORM formd_event(p_id, 'submission.' || o_status, p_form, p_site, o_status, p_at);
	END IF;
END;
$$;

-- formd_decide as in 0002, with the placing in formd_place, and the event
-- of every entry it makes (stored, waitlisted, spam) recorded in the same
-- transaction.
CREATE OR REPLACE FUNCTION formd_decide(
	p_id text, p_seq bigint, p_form text, p_site text, p_key text, p_spam boolean,
	p_received_at timestamptz, p_decided_at timestamptz, p_fingerprint bytea,
	p_claims text[], p_data bytea,
	OUT o_id text, OUT o_decision text, OUT o_status text, OUT o_received_at timestamptz,
	OUT o_fingerprint bytea, OUT o_replayed boolean,
	OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_status text := CASE WHEN p_spam THEN 'spam' ELSE 'stored' END;
	v_n integer;
BEGIN
	INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
	VALUES (p_id, p_seq, p_form, p_site, p_key, v_status, v_status, p_received_at, p_decided_at, p_fingerprint, p_claims, p_data)
	ON CONFLICT DO NOTHING;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 0 THEN
		-- Every unique index is an arbiter: the same entry decided by two
		-- instances at once conflicts on its id as well as on its key, and
		-- must be a replay, not an error.
		SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, true, o.id, o.key, o.decision, o.received_at
		INTO o_id, o_decision, o_status, o_received_at, o_fingerprint, o_replayed, o_same_id, o_same_key, o_same_decision, o_same_received_at
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = p_form AND e.key = p_key;
		IF NOT FOUND THEN
			RAISE unique_violation USING MESSAGE = format('entry id %s is already used for another key', p_id);
		END IF;
		RETURN;
	END IF;
	o_id := p_id; o_received_at := p_received_at; o_fingerprint := p_fingerprint; o_replayed := false;
	IF p_spam THEN
		o_decision := v_status; o_status := v_status;
		PERFORM formd_event(p_id, 'submission.spam', p_form, p_site, v_status, p_decided_at);
		RETURN;
	END IF;
	SELECT pl.o_status, pl.o_same_id, pl.o_same_key, pl.o_same_decision, pl.o_same_received_at
	INTO o_status, o_same_id, o_same_key, o_same_decision, o_same_received_at
	FROM formd_place(p_id, p_form, p_site, p_claims, p_fingerprint, p_decided_at) pl;
	o_decision := o_status;
END;
$$;

-- formd_promote as in 0001, and each promotion records its event.
CREATE OR REPLACE FUNCTION formd_promote(p_form text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	v_id text;
	v_n integer;
BEGIN
	LOOP
		UPDATE capacity SET taken = taken + 1 WHERE form = p_form AND (capacity IS NULL OR taken < capacity);
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			RETURN;
		END IF;
		LOOP
			SELECT id INTO v_id FROM entries WHERE form = p_form AND status = 'waitlisted' ORDER BY seq LIMIT 1 FOR UPDATE;
			-- Under READ COMMITTED a row changed while we waited for its lock
			-- is re-checked and may drop out: look again until none is left.
			EXIT WHEN FOUND OR NOT EXISTS (SELECT 1 FROM entries WHERE form = p_form AND status = 'waitlisted');
		END LOOP;
		IF v_id IS NULL THEN
			UPDATE capacity SET taken = taken - 1 WHERE form = p_form;
			RETURN;
		END IF;
		UPDATE entries SET status = 'stored' WHERE id = v_id;
		PERFORM formd_event(v_id, 'submission.promoted', p_form, (SELECT site FROM entries WHERE id = v_id), 'stored', now());
		RETURN NEXT v_id;
		v_id := NULL;
	END LOOP;
END;
$$;
