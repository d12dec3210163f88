-- The first schema of the PostgreSQL store: the same tables and rules as
-- the embedded store, shared by every formd instance.
CREATE TABLE entries (
	id          text        NOT NULL,
	seq         bigint      NOT NULL, -- journal position: arrival order
	form        text        NOT NULL,
	site        text        NOT NULL,
	key         text        NOT NULL,
	status      text        NOT NULL,
	decision    text        NOT NULL,
	received_at timestamptz NOT NULL,
	decided_at  timestamptz NOT NULL,
	fingerprint bytea       NOT NULL,
	claims      text[]      NOT NULL,
	data        bytea       -- the normalized values as JSON, byte for byte
);
CREATE UNIQUE INDEX entries_form_key ON entries(form, key);
CREATE UNIQUE INDEX entries_id ON entries(id);
CREATE INDEX entries_form_seq ON entries(form, seq);
CREATE INDEX entries_waitlist ON entries(form, seq) WHERE status = 'waitlisted';

-- One row per live participant: the primary key is the uniqueness rule.
CREATE TABLE claims (
	form     text NOT NULL,
	claim    text NOT NULL,
	entry_id text NOT NULL,
	PRIMARY KEY (form, claim)
);
CREATE INDEX claims_entry ON claims(entry_id);

-- Places per form; taken only moves through guarded updates.
CREATE TABLE capacity (
	form      text PRIMARY KEY,
	capacity  integer,                 -- NULL: no limit
	when_full text    NOT NULL,
	taken     integer NOT NULL DEFAULT 0 -- may exceed capacity only when the owner lowers it
);

CREATE TABLE forms (
	id         text PRIMARY KEY,
	site       text        NOT NULL,
	source     bytea       NOT NULL,
	version    bigint      NOT NULL,
	updated_at timestamptz NOT NULL
);

CREATE TABLE dead_letters (
	entry_id text PRIMARY KEY,
	form     text        NOT NULL,
	key      text        NOT NULL,
	seq      bigint      NOT NULL,
	reason   text        NOT NULL,
	attempts integer     NOT NULL,
	at       timestamptz NOT NULL
);

CREATE TABLE tokens (
	name       text PRIMARY KEY,
	hash       bytea       NOT NULL,
	created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX tokens_hash ON tokens(hash);

CREATE TABLE meta (k text PRIMARY KEY, v bigint NOT NULL);
INSERT INTO meta(k, v) VALUES ('forms_version', 0);

-- formd_decide decides one submission (see package store for the rules),
-- inside the caller's transaction, so that a batch of decisions is one
-- pipelined round trip. Every rule is a constraint or a guarded update:
--   * the entry row goes in first, as stored, and the unique (form, key)
--     index decides a replay: a concurrent decision of the same key waits
--     for the first transaction and then finds its row;
--   * each claim is an insert into claims' primary key; one that is held
--     makes the entry a duplicate, and the claims taken so far go again;
--   * a place is an UPDATE ... WHERE taken < capacity on the form's row,
--     whose row lock serializes instances and re-checks the guard after
--     the wait, so no two transactions take the last place.
CREATE FUNCTION formd_decide(
	p_id text, p_seq bigint, p_form text, p_site text, p_key text, p_spam boolean,
	p_received_at timestamptz, p_decided_at timestamptz, p_fingerprint bytea,
	p_claims text[], p_data bytea,
	OUT o_id text, OUT o_decision text, OUT o_status text, OUT o_received_at timestamptz,
	OUT o_fingerprint bytea, OUT o_replayed boolean)
LANGUAGE plpgsql AS $$
DECLARE
	v_status text := CASE WHEN p_spam THEN 'spam' ELSE 'stored' END;
	v_claim text;
	v_n integer;
	v_when_full text;
BEGIN
	INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
	VALUES (p_id, p_seq, p_form, p_site, p_key, v_status, v_status, p_received_at, p_decided_at, p_fingerprint, p_claims, p_data)
	ON CONFLICT DO NOTHING;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 0 THEN
		-- Every unique index is an arbiter: the same entry decided by two
		-- instances at once conflicts on its id as well as on its key, and
		-- must be a replay, not an error.
		SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, true
		INTO o_id, o_decision, o_status, o_received_at, o_fingerprint, o_replayed
		FROM entries e WHERE e.form = p_form AND e.key = p_key;
		IF NOT FOUND THEN
			RAISE unique_violation USING MESSAGE = format('entry id %s is already used for another key', p_id);
		END IF;
		RETURN;
	END IF;
	o_id := p_id; o_received_at := p_received_at; o_fingerprint := p_fingerprint; o_replayed := false;
	IF p_spam THEN
		o_decision := v_status; o_status := v_status;
		RETURN;
	END IF;
	FOREACH v_claim IN ARRAY coalesce(p_claims, '{}') LOOP
		INSERT INTO claims(form, claim, entry_id) VALUES (p_form, v_claim, p_id) ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			DELETE FROM claims WHERE entry_id = p_id;
			UPDATE entries SET status = 'duplicate', decision = 'duplicate' WHERE id = p_id;
			o_decision := 'duplicate'; o_status := 'duplicate';
			RETURN;
		END IF;
	END LOOP;
	UPDATE capacity SET taken = taken + 1 WHERE form = p_form AND (capacity IS NULL OR taken < capacity);
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 1 THEN
		o_decision := 'stored'; o_status := 'stored';
		RETURN;
	END IF;
	SELECT when_full INTO v_when_full FROM capacity WHERE form = p_form;
	IF NOT FOUND THEN
		-- A form the store has no settings for has no limit.
		o_decision := 'stored'; o_status := 'stored';
		RETURN;
	END IF;
	IF v_when_full = 'waitlist' THEN
		v_status := 'waitlisted';
	ELSE
		v_status := 'rejected';
		DELETE FROM claims WHERE entry_id = p_id;
	END IF;
	UPDATE entries SET status = v_status, decision = v_status WHERE id = p_id;
	o_decision := v_status; o_status := v_status;
END;
$$;

-- formd_promote moves the oldest waitlisted entries of a form into free
-- places, one guarded place at a time, and returns their ids. The place is
-- taken first, so that the form's capacity row lock orders promoters; the
-- entry is then locked, and one cancelled meanwhile is passed over.
CREATE FUNCTION formd_promote(p_form text) RETURNS SETOF text
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
		RETURN NEXT v_id;
		v_id := NULL;
	END LOOP;
END;
$$;
