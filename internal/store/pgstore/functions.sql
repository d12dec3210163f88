-- The store's decision rules in PostgreSQL, as they are today: every
-- function the store calls, each with CREATE OR REPLACE. Opening the store
-- runs this file after the migrations, in the transaction that records the
-- release and under the migration lock, so the database always has these
-- bodies. Change a rule here, in one diff; a migration keeps only schema
-- changes (and must not replace these functions, which this file would undo).
-- A change of a function's arguments or result needs a migration that drops
-- the old one. The rules themselves are package store's (store.go); the
-- embedded store has them in Go (sqlitestore/decide.go).
--
-- The version below is recorded in the table functions_version with the
-- release that defined the bodies; a binary whose version is lower starts
-- and uses the bodies there rather than putting its older ones back. Raise
-- it with every change of this file (TestFunctionsVersionRaised).
-- functions-version: 1

-- formd_event records an event of an entry: the next occurrence of its
-- type (1 unless the entry had one before).
CREATE OR REPLACE FUNCTION formd_event(p_entry text, p_type text, p_form text, p_site text, p_status text, p_at timestamptz)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO events(entry_id, n, type, form, site, status, at)
	SELECT p_entry, coalesce(max(n), 0) + 1, p_type, p_form, p_site, p_status, p_at
	FROM events WHERE entry_id = p_entry AND type = p_type;
$$;

-- formd_claim_uploads claims for an entry the uploads its data lists under
-- _uploads. It returns '' when it took them all, 'upload-used' when one is
-- another entry's, 'upload-missing' when one is not a complete upload of
-- the form; on a refusal it gives back the claims it took. An id listed
-- twice is claimed once.
CREATE OR REPLACE FUNCTION formd_claim_uploads(p_id text, p_form text, p_data bytea) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	v_upload text;
	v_n integer := 0;
	v_rows integer;
	v_holder text;
BEGIN
	IF p_data IS NULL OR position('"_uploads":'::bytea IN p_data) = 0 THEN
		RETURN '';
	END IF;
	FOR v_upload IN SELECT jsonb_array_elements_text(convert_from(p_data, 'UTF8')::jsonb -> '_uploads') LOOP
		v_n := v_n + 1;
		INSERT INTO upload_claims(upload_id, entry_id, form, n)
			SELECT u.id, p_id, p_form, v_n FROM uploads u
			WHERE u.id = v_upload AND u.form = p_form AND u.completed_at IS NOT NULL
			ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		CONTINUE WHEN v_rows = 1;
		SELECT entry_id INTO v_holder FROM upload_claims WHERE upload_id = v_upload;
		CONTINUE WHEN v_holder = p_id;
		DELETE FROM upload_claims WHERE entry_id = p_id;
		IF v_holder IS NOT NULL THEN
			RETURN 'upload-used';
		END IF;
		RETURN 'upload-missing';
	END LOOP;
	RETURN '';
END;
$$;

-- formd_place decides the participant and the place of an entry whose row
-- is in, as stored, and records the event of the entry it makes.
--   * Each claim is an insert into claims' primary key. A held claim makes
--     the entry a duplicate (a resend, same_as, when the holder has exactly
--     its content), and gives back the claims taken so far. On a full form
--     that turns people away with unique_answer 'generic', a new key of a
--     registered participant is rejected instead, so a full form cannot be
--     asked who is registered.
--   * A place is an UPDATE ... WHERE taken < capacity on the form's row: its
--     row lock serializes instances and re-checks the guard after the wait,
--     so no two transactions take the last place.
CREATE OR REPLACE FUNCTION formd_place(
	p_id text, p_form text, p_site text, p_claims text[], p_fingerprint bytea, p_at timestamptz,
	OUT o_status text, OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_claim text;
	v_n integer;
	v_when_full text;
	v_holder entries%ROWTYPE;
	v_taken text[] := '{}';
BEGIN
	FOREACH v_claim IN ARRAY coalesce(p_claims, '{}') LOOP
		CONTINUE WHEN v_claim = ANY(v_taken);
		v_taken := v_taken || v_claim;
		INSERT INTO claims(form, claim, entry_id) VALUES (p_form, v_claim, p_id) ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			DELETE FROM claims WHERE entry_id = p_id;
			SELECT e.* INTO v_holder FROM claims c JOIN entries e ON e.id = c.entry_id WHERE c.form = p_form AND c.claim = v_claim;
			IF FOUND AND v_holder.fingerprint = p_fingerprint THEN
				o_same_id := v_holder.id; o_same_key := v_holder.key;
				o_same_decision := v_holder.decision; o_same_received_at := v_holder.received_at;
			END IF;
			o_status := 'duplicate';
			IF o_same_id IS NULL AND EXISTS (SELECT 1 FROM capacity WHERE form = p_form AND capacity IS NOT NULL
					AND taken >= capacity AND when_full <> 'waitlist' AND unique_answer = 'generic') THEN
				o_status := 'rejected';
			END IF;
			UPDATE entries SET status = o_status, decision = o_status, same_as = o_same_id WHERE id = p_id;
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

-- formd_decide decides a journaled submission in one transaction. A key
-- the form has seen is a replay of its first decision. A new entry claims
-- its uploads first (upload-used, upload-missing: no claim, no place, no
-- event), then is spam, or is placed by formd_place.
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
	v_uploads text;
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
	-- uploads (0050): the entry's files are claimed first.
	v_uploads := formd_claim_uploads(p_id, p_form, p_data);
	IF v_uploads <> '' THEN
		UPDATE entries SET status = v_uploads, decision = v_uploads WHERE id = p_id;
		o_decision := v_uploads; o_status := v_uploads;
		RETURN;
	END IF;
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

-- formd_promote gives free places to the waitlist in (seq, id) order, the
-- order of store.Cursor, and returns the entries it promoted. Each
-- promotion's event takes the store's clock (p_at).
CREATE OR REPLACE FUNCTION formd_promote(p_form text, p_at timestamptz) RETURNS SETOF text
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
			SELECT id INTO v_id FROM entries WHERE form = p_form AND status = 'waitlisted' ORDER BY seq, id LIMIT 1 FOR UPDATE;
			-- Under READ COMMITTED a row changed while we waited for its lock
			-- is re-checked and may drop out: look again until none is left.
			EXIT WHEN FOUND OR NOT EXISTS (SELECT 1 FROM entries WHERE form = p_form AND status = 'waitlisted');
		END LOOP;
		IF v_id IS NULL THEN
			UPDATE capacity SET taken = taken - 1 WHERE form = p_form;
			RETURN;
		END IF;
		UPDATE entries SET status = 'stored' WHERE id = v_id;
		PERFORM formd_event(v_id, 'submission.promoted', p_form, (SELECT site FROM entries WHERE id = v_id), 'stored', p_at);
		RETURN NEXT v_id;
		v_id := NULL;
	END LOOP;
END;
$$;

-- The one-argument form, at the database's time, is for instances of
-- releases before 0013 still running during an upgrade.
CREATE OR REPLACE FUNCTION formd_promote(p_form text) RETURNS SETOF text
LANGUAGE sql AS $$ SELECT formd_promote(p_form, now()) $$;
