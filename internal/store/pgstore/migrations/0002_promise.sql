-- The promise at its edges: a resend of a live entry's content under a new
-- key is answered as that entry (same_as), and small settings such as the
-- installation's secret are kept by name.
-- The admin token is issued again at each start until it is first used,
-- so a token printed to a terminal nobody read is never the only way in.
ALTER TABLE tokens ADD COLUMN used_at timestamptz;

ALTER TABLE entries ADD COLUMN same_as text;

CREATE TABLE settings (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);

-- formd_decide as in 0001, and: when the participant's claim is held by a
-- live entry with exactly this content (the same fingerprint), the new key
-- is a resend of that entry: decided duplicate, with same_as naming the
-- entry it is answered as.
DROP FUNCTION formd_decide(text, bigint, text, text, text, boolean, timestamptz, timestamptz, bytea, text[], bytea);
CREATE FUNCTION formd_decide(
	p_id text, p_seq bigint, p_form text, p_site text, p_key text, p_spam boolean,
	p_received_at timestamptz, p_decided_at timestamptz, p_fingerprint bytea,
	p_claims text[], p_data bytea,
	OUT o_id text, OUT o_decision text, OUT o_status text, OUT o_received_at timestamptz,
	OUT o_fingerprint bytea, OUT o_replayed boolean,
	OUT o_same_id text, OUT o_same_key text, OUT o_same_decision text, OUT o_same_received_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_status text := CASE WHEN p_spam THEN 'spam' ELSE 'stored' END;
	v_claim text;
	v_n integer;
	v_when_full text;
	v_holder entries%ROWTYPE;
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
		RETURN;
	END IF;
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
