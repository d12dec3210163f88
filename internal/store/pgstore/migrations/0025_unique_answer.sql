-- A form's unique_answer (issue 17): what a registered participant's new
-- key is told when the form is full and turns people away. 'generic' (the
-- default, for forms written before the option too) decides it rejected,
-- answered capacity-reached as anyone new is, so that a full form cannot
-- be asked who is registered; 'duplicate' decides it duplicate. A resend
-- (the holder's exact content) stays a duplicate answered as the holder.
ALTER TABLE capacity ADD COLUMN unique_answer text NOT NULL DEFAULT 'generic';

-- formd_place as in 0014, with that rule where a claim is held.
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
