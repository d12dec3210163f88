-- Promotion at its edges, as in the embedded store: the waitlist goes in
-- (seq, id) order, the order of store.Cursor, so that entries sharing a
-- journal position (decided from two journals) are promoted in the same
-- order by every store; and a promotion's event takes the time of the
-- store's clock (p_at), as every other event does, not the database
-- server's.
CREATE FUNCTION formd_promote(p_form text, p_at timestamptz) RETURNS SETOF text
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

-- The form of 0003 stays for instances not upgraded yet, at the
-- database's time.
CREATE OR REPLACE FUNCTION formd_promote(p_form text) RETURNS SETOF text
LANGUAGE sql AS $$ SELECT formd_promote(p_form, now()) $$;
