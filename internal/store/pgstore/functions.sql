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
-- functions-version: 2

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
			ELSIF o_same_id IS NULL AND formd_full_option_generic(p_id, p_form) THEN
				-- The same for the full option it chose (0074).
				o_status := 'rejected';
			END IF;
			UPDATE entries SET status = o_status, decision = o_status, same_as = o_same_id WHERE id = p_id;
			RETURN;
		END IF;
	END LOOP;
	-- The form's place, and the option's beside it (formd_take_place).
	o_status := formd_take_place(p_id, p_form);
	IF o_status = 'rejected' THEN
		DELETE FROM claims WHERE entry_id = p_id;
	END IF;
	UPDATE entries SET status = o_status, decision = o_status WHERE id = p_id;
	IF o_status <> 'rejected' THEN
		PERFORM formd_event(p_id, 'submission.' || o_status, p_form, p_site, o_status, p_at);
	END IF;
END;
$$;

-- formd_take_place (0074) takes an entry's places and says what the entry
-- is: 'stored' when it took the form's place and, when it chose an option
-- with places (capacity.place_field, option_places), that option's too;
-- else 'waitlisted' or 'rejected' as the form's when_full says. Both are
-- guarded updates, the form's row locked first and the option's after it
-- (every path in this order), and a form place taken for an option that
-- is full is given back in the same transaction. The entry keeps its
-- option (entries.place) when stored or waitlisted, and when rejected for
-- the option, so that the answer names it. On a form with review (0075)
-- an entry that takes its places is 'pending' instead of 'stored'.
CREATE OR REPLACE FUNCTION formd_take_place(p_id text, p_form text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	v_field text;
	v_option text;
	v_n integer;
	v_option_full boolean := false;
	v_when_full text;
	v_status text;
BEGIN
	SELECT place_field INTO v_field FROM capacity WHERE form = p_form;
	IF v_field IS NOT NULL THEN
		SELECT o.value INTO v_option FROM entries e JOIN option_places o
			ON o.form = p_form AND o.value = convert_from(e.data, 'UTF8')::jsonb ->> v_field
			WHERE e.id = p_id;
	END IF;
	UPDATE capacity SET taken = taken + 1 WHERE form = p_form AND (capacity IS NULL OR taken < capacity);
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 1 AND v_option IS NOT NULL THEN
		UPDATE option_places SET taken = taken + 1 WHERE form = p_form AND value = v_option AND (capacity IS NULL OR taken < capacity);
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			UPDATE capacity SET taken = taken - 1 WHERE form = p_form;
			v_option_full := true;
		END IF;
	END IF;
	IF v_n = 1 THEN
		-- Review (0075): an entry holding its places waits for an editor.
		v_status := CASE WHEN (SELECT review FROM capacity WHERE form = p_form) THEN 'pending' ELSE 'stored' END;
	ELSE
		SELECT when_full INTO v_when_full FROM capacity WHERE form = p_form;
		IF NOT FOUND THEN
			-- A form the store has no settings for has no limit.
			v_status := 'stored';
		ELSIF v_when_full = 'waitlist' THEN
			v_status := 'waitlisted';
		ELSE
			v_status := 'rejected';
		END IF;
	END IF;
	IF v_option IS NOT NULL AND (v_status <> 'rejected' OR v_option_full) THEN
		UPDATE entries SET place = v_option WHERE id = p_id;
	END IF;
	RETURN v_status;
END;
$$;

-- formd_full_option_generic (0074) says the option an entry chose has all
-- its places taken on a form that turns people away with unique_answer
-- generic, and marks the entry with it: a registered participant's new
-- key for it is answered as anyone new (capacity-reached naming the
-- option), so that a full session cannot be asked who is registered.
CREATE OR REPLACE FUNCTION formd_full_option_generic(p_id text, p_form text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	v_option text;
BEGIN
	SELECT o.value INTO v_option FROM capacity c JOIN entries e ON e.id = p_id
		JOIN option_places o ON o.form = c.form AND o.value = convert_from(e.data, 'UTF8')::jsonb ->> c.place_field
		WHERE c.form = p_form AND c.place_field IS NOT NULL AND c.when_full <> 'waitlist' AND c.unique_answer = 'generic'
			AND o.capacity IS NOT NULL AND o.taken >= o.capacity;
	IF v_option IS NULL THEN
		RETURN false;
	END IF;
	UPDATE entries SET place = v_option WHERE id = p_id;
	RETURN true;
END;
$$;

-- formd_free_place (0074) gives back the places a stored entry held: the
-- form's, then its option's.
CREATE OR REPLACE FUNCTION formd_free_place(p_id text, p_form text) RETURNS void
LANGUAGE sql AS $$
	UPDATE capacity SET taken = taken - 1 WHERE form = p_form AND taken > 0;
	UPDATE option_places SET taken = taken - 1
		WHERE form = p_form AND value = (SELECT place FROM entries WHERE id = p_id) AND taken > 0;
$$;

-- formd_review (0075) approves (p_approve) or declines a pending entry,
-- once: the guarded update from 'pending' locks the row, so of two
-- instances at once one changes it and the other finds it no longer
-- pending (READ COMMITTED re-checks the guard after the wait). It returns
-- the entry's status before when nothing changed ('' for no such entry)
-- and 'pending' when it decided; declining frees the entry's claims and
-- places (formd_free_place) and the caller promotes the waitlist.
CREATE OR REPLACE FUNCTION formd_review(p_form text, p_id text, p_approve boolean, p_at timestamptz) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	v_site text;
	v_was text;
	v_to text := CASE WHEN p_approve THEN 'stored' ELSE 'declined' END;
BEGIN
	UPDATE entries SET status = v_to WHERE form = p_form AND id = p_id AND status = 'pending' RETURNING site INTO v_site;
	IF NOT FOUND THEN
		SELECT status INTO v_was FROM entries WHERE form = p_form AND id = p_id;
		RETURN coalesce(v_was, '');
	END IF;
	PERFORM formd_event(p_id, CASE WHEN p_approve THEN 'submission.approved' ELSE 'submission.declined' END, p_form, v_site, v_to, p_at);
	IF NOT p_approve THEN
		DELETE FROM claims WHERE entry_id = p_id;
		PERFORM formd_free_place(p_id, p_form);
	END IF;
	RETURN 'pending';
END;
$$;

-- formd_check_uploads claims for an entry the uploads it names with
-- their fields (p_ids, p_fields: journal.Entry.Uploads, DESIGN invariant
-- 12): each must be a complete upload of the form and field, not expired
-- when the entry was received, and no other entry's. It returns '' when
-- it took them all, else the status ('upload-used', 'upload-missing') and
-- the detail ('code:field', store.UploadDetail), giving back the claims
-- it took. An id listed twice is claimed once.
CREATE OR REPLACE FUNCTION formd_check_uploads(p_id text, p_form text, p_ids text[], p_fields text[], p_received_at timestamptz,
	OUT o_status text, OUT o_detail text)
LANGUAGE plpgsql AS $$
DECLARE
	v_i integer;
	v_rows integer;
	v_up uploads%ROWTYPE;
	v_holder text;
	v_code text;
BEGIN
	o_status := ''; o_detail := NULL;
	FOR v_i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
		CONTINUE WHEN p_ids[v_i] = ANY(p_ids[1:v_i-1]);
		INSERT INTO upload_claims(upload_id, entry_id, form, n)
			SELECT u.id, p_id, p_form, v_i FROM uploads u
			WHERE u.id = p_ids[v_i] AND u.form = p_form AND u.field = p_fields[v_i]
				AND u.completed_at IS NOT NULL AND u.expires_at >= p_received_at
			ON CONFLICT DO NOTHING;
		GET DIAGNOSTICS v_rows = ROW_COUNT;
		CONTINUE WHEN v_rows = 1;
		o_status := 'upload-missing'; v_code := 'upload-not-found';
		SELECT * INTO v_up FROM uploads WHERE id = p_ids[v_i];
		IF FOUND AND v_up.form = p_form AND v_up.field = p_fields[v_i] AND v_up.expires_at >= p_received_at THEN
			SELECT entry_id INTO v_holder FROM upload_claims WHERE upload_id = p_ids[v_i];
			IF v_holder IS NOT NULL THEN
				o_status := 'upload-used'; v_code := 'upload-already-used';
			ELSIF v_up.completed_at IS NULL THEN
				v_code := 'upload-incomplete';
			END IF;
		END IF;
		DELETE FROM upload_claims WHERE entry_id = p_id;
		o_detail := v_code || ':' || p_fields[v_i];
		RETURN;
	END LOOP;
END;
$$;

-- formd_record_posted records, in the decision's transaction, the uploads
-- of the files a plain HTML post carried (p_posted: a JSON array beside
-- p_ids and p_fields, journal.Posted or null for an upload sent over tus
-- first): complete from the entry's arrival, of the entry's form and
-- field. An id recorded already (the same post's retry) is left as it is;
-- formd_check_uploads then claims them as any other.
CREATE OR REPLACE FUNCTION formd_record_posted(p_form text, p_ids text[], p_fields text[], p_posted jsonb, p_received_at timestamptz)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO uploads(id, form, field, size, name, type, sha256, created_at, expires_at, completed_at)
	SELECT p_ids[t.i], p_form, p_fields[t.i], (t.p->>'size')::bigint, coalesce(t.p->>'name', ''), coalesce(t.p->>'type', ''),
		decode(t.p->>'sha256', 'hex'), p_received_at, (t.p->>'expires')::timestamptz, p_received_at
	FROM jsonb_array_elements(p_posted) WITH ORDINALITY AS t(p, i)
	WHERE jsonb_typeof(t.p) = 'object'
	ON CONFLICT (id) DO NOTHING;
$$;

-- formd_spend_challenge spends a proof-of-work solution for (form, key) in
-- the decision's transaction: true when this key holds it (now, or
-- earlier: a retry), false when another key spent it. The row is kept
-- at least until p_now (a late decision still outlives its grace), and
-- expired rows are pruned as it goes (store.ChallengePrune, Grace).
CREATE OR REPLACE FUNCTION formd_spend_challenge(p_sig text, p_form text, p_key text, p_expires timestamptz, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	v_rows integer;
BEGIN
	INSERT INTO challenge_uses(signature, form, key, expires) VALUES (p_sig, p_form, p_key, greatest(p_expires, p_now))
		ON CONFLICT (signature) DO UPDATE SET expires = challenge_uses.expires
		WHERE challenge_uses.form = excluded.form AND challenge_uses.key = excluded.key;
	GET DIAGNOSTICS v_rows = ROW_COUNT;
	DELETE FROM challenge_uses WHERE signature IN
		(SELECT signature FROM challenge_uses WHERE expires <= p_now - interval '5 minutes' LIMIT 100);
	RETURN v_rows = 1;
END;
$$;

-- formd_decide_entry decides a journaled submission in one transaction. A
-- key the form has seen is a replay of its first decision. A new entry
-- claims its uploads first (upload-used, upload-missing: no claim, no
-- place, no event), then spends its proof-of-work solution (another key's:
-- challenge-invalid when p_refuse, else spam with the reason
-- challenge-replayed), then is spam, or is placed by formd_place. The
-- uploads of a plain HTML post's files (p_posted) are recorded just before
-- they are claimed. Entries
-- of releases that checked uploads and spent solutions at intake pass
-- NULL p_upload_fields and p_sig: their uploads are claimed by the ids in
-- their data (formd_claim_uploads) and nothing is spent.
CREATE OR REPLACE FUNCTION formd_decide_entry(
	p_id text, p_seq bigint, p_form text, p_site text, p_key text, p_spam boolean,
	p_received_at timestamptz, p_decided_at timestamptz, p_fingerprint bytea,
	p_claims text[], p_data bytea,
	p_upload_ids text[], p_upload_fields text[], p_sig text, p_sig_expires timestamptz, p_refuse boolean, p_spam_reason text,
	p_posted jsonb DEFAULT NULL,
	OUT o_id text, OUT o_decision text, OUT o_status text, OUT o_received_at timestamptz,
	OUT o_fingerprint bytea, OUT o_replayed boolean,
	OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz,
	OUT o_detail text)
LANGUAGE plpgsql AS $$
DECLARE
	v_status text := CASE WHEN p_spam THEN 'spam' ELSE 'stored' END;
	v_n integer;
	v_uploads text;
	v_reason text := nullif(p_spam_reason, '');
BEGIN
	INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
	VALUES (p_id, p_seq, p_form, p_site, p_key, v_status, v_status, p_received_at, p_decided_at, p_fingerprint, p_claims, p_data)
	ON CONFLICT DO NOTHING;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n = 0 THEN
		-- Every unique index is an arbiter: the same entry decided by two
		-- instances at once conflicts on its id as well as on its key, and
		-- must be a replay, not an error.
		SELECT e.id, e.decision, e.status, e.received_at, e.fingerprint, true, o.id, o.key, o.decision, o.received_at, e.detail
		INTO o_id, o_decision, o_status, o_received_at, o_fingerprint, o_replayed, o_same_id, o_same_key, o_same_decision, o_same_received_at, o_detail
		FROM entries e LEFT JOIN entries o ON o.id = e.same_as WHERE e.form = p_form AND e.key = p_key;
		IF NOT FOUND THEN
			RAISE unique_violation USING MESSAGE = format('entry id %s is already used for another key', p_id);
		END IF;
		RETURN;
	END IF;
	o_id := p_id; o_received_at := p_received_at; o_fingerprint := p_fingerprint; o_replayed := false;
	-- the key's draft (0077), if one was saved, is consumed by the decision.
	DELETE FROM drafts WHERE form = p_form AND key = p_key;
	-- uploads (0050, 0062): the entry's files are claimed first.
	IF p_upload_fields IS NULL THEN
		v_uploads := formd_claim_uploads(p_id, p_form, p_data);
	ELSE
		-- a plain HTML post's files (0085): recorded here, not at intake.
		IF p_posted IS NOT NULL THEN
			PERFORM formd_record_posted(p_form, p_upload_ids, p_upload_fields, p_posted, p_received_at);
		END IF;
		SELECT c.o_status, c.o_detail INTO v_uploads, o_detail
		FROM formd_check_uploads(p_id, p_form, p_upload_ids, p_upload_fields, p_received_at) c;
	END IF;
	IF v_uploads <> '' THEN
		UPDATE entries SET status = v_uploads, decision = v_uploads, detail = o_detail WHERE id = p_id;
		o_decision := v_uploads; o_status := v_uploads;
		RETURN;
	END IF;
	-- the proof-of-work solution (0062): spent here, not at intake.
	IF p_sig IS NOT NULL AND NOT formd_spend_challenge(p_sig, p_form, p_key, p_sig_expires, p_decided_at) THEN
		IF p_refuse THEN
			DELETE FROM upload_claims WHERE entry_id = p_id;
			UPDATE entries SET status = 'challenge-invalid', decision = 'challenge-invalid' WHERE id = p_id;
			o_decision := 'challenge-invalid'; o_status := 'challenge-invalid';
			RETURN;
		END IF;
		v_status := 'spam'; v_reason := 'challenge-replayed';
		UPDATE entries SET status = 'spam', decision = 'spam' WHERE id = p_id;
	END IF;
	IF v_reason IS NOT NULL THEN
		INSERT INTO spam_reasons(form, key, reason, noted_at) VALUES (p_form, p_key, v_reason, p_decided_at)
			ON CONFLICT (form, key) DO UPDATE SET reason = excluded.reason, noted_at = excluded.noted_at;
	END IF;
	IF v_status = 'spam' THEN
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

-- formd_decide is formd_decide_entry for instances of releases before
-- 0062 still running during an upgrade: their entries were checked at
-- intake.
CREATE OR REPLACE FUNCTION formd_decide(
	p_id text, p_seq bigint, p_form text, p_site text, p_key text, p_spam boolean,
	p_received_at timestamptz, p_decided_at timestamptz, p_fingerprint bytea,
	p_claims text[], p_data bytea,
	OUT o_id text, OUT o_decision text, OUT o_status text, OUT o_received_at timestamptz,
	OUT o_fingerprint bytea, OUT o_replayed boolean,
	OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz)
LANGUAGE sql AS $$
	SELECT d.o_id, d.o_decision, d.o_status, d.o_received_at, d.o_fingerprint, d.o_replayed,
		d.o_same_id, d.o_same_key, d.o_same_decision, d.o_same_received_at
	FROM formd_decide_entry(p_id, p_seq, p_form, p_site, p_key, p_spam, p_received_at, p_decided_at, p_fingerprint,
		p_claims, p_data, NULL, NULL, NULL, NULL, NULL, NULL) d;
$$;

-- formd_promote gives free places to the waitlist in (seq, id) order, the
-- order of store.Cursor, and returns the entries it promoted. Each
-- promotion's event takes the store's clock (p_at). An entry waiting for
-- an option (entries.place) takes the option's place with the form's;
-- entries whose option is still full are passed over, so each option's
-- waitlist keeps its own arrival order. The form's row is locked first,
-- which holds every other decision on the form, so the option found free
-- stays free until the update below takes it.
CREATE OR REPLACE FUNCTION formd_promote(p_form text, p_at timestamptz) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	v_id text;
	v_place text;
	v_status text;
	v_n integer;
BEGIN
	LOOP
		UPDATE capacity SET taken = taken + 1 WHERE form = p_form AND (capacity IS NULL OR taken < capacity);
		GET DIAGNOSTICS v_n = ROW_COUNT;
		IF v_n = 0 THEN
			RETURN;
		END IF;
		LOOP
			SELECT e.id, e.place INTO v_id, v_place FROM entries e WHERE e.form = p_form AND e.status = 'waitlisted'
				AND (e.place IS NULL OR NOT EXISTS (SELECT 1 FROM option_places o WHERE o.form = p_form AND o.value = e.place
					AND o.capacity IS NOT NULL AND o.taken >= o.capacity))
				ORDER BY e.seq, e.id LIMIT 1 FOR UPDATE OF e;
			-- Under READ COMMITTED a row changed while we waited for its lock
			-- is re-checked and may drop out: look again until none is left.
			EXIT WHEN FOUND OR NOT EXISTS (SELECT 1 FROM entries e WHERE e.form = p_form AND e.status = 'waitlisted'
				AND (e.place IS NULL OR NOT EXISTS (SELECT 1 FROM option_places o WHERE o.form = p_form AND o.value = e.place
					AND o.capacity IS NOT NULL AND o.taken >= o.capacity)));
		END LOOP;
		IF v_id IS NULL THEN
			UPDATE capacity SET taken = taken - 1 WHERE form = p_form;
			RETURN;
		END IF;
		IF v_place IS NOT NULL THEN
			UPDATE option_places SET taken = taken + 1 WHERE form = p_form AND value = v_place;
		END IF;
		-- On a form with review (0075) the entry now holding a place waits.
		UPDATE entries SET status = CASE WHEN (SELECT review FROM capacity WHERE form = p_form) THEN 'pending' ELSE 'stored' END
			WHERE id = v_id RETURNING status INTO v_status;
		PERFORM formd_event(v_id, 'submission.promoted', p_form, (SELECT site FROM entries WHERE id = v_id), v_status, p_at);
		RETURN NEXT v_id;
		v_id := NULL;
		v_place := NULL;
	END LOOP;
END;
$$;

-- The one-argument form, at the database's time, is for instances of
-- releases before 0013 still running during an upgrade.
CREATE OR REPLACE FUNCTION formd_promote(p_form text) RETURNS SETOF text
LANGUAGE sql AS $$ SELECT formd_promote(p_form, now()) $$;
