-- Uploads (a file field's bytes, sent before the submission) and their
-- claims: an upload belongs to at most one entry, the primary key of
-- upload_claims is that rule, and formd_decide inserts the claim in the
-- decision's own transaction (formd_claim_uploads below). The foreign key
-- makes a claim and the deletion of an expired upload exclude each other:
-- the claim locks the upload's row, and a deletion that comes after it
-- fails rather than leave an entry pointing at nothing.
CREATE TABLE uploads (
	id           text        PRIMARY KEY,
	form         text        NOT NULL,
	field        text        NOT NULL,
	size         bigint      NOT NULL,
	name         text        NOT NULL DEFAULT '',
	type         text        NOT NULL DEFAULT '',
	sha256       bytea,                 -- NULL until every byte is durable
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	completed_at timestamptz
);
CREATE INDEX uploads_expiry ON uploads(expires_at);

CREATE TABLE upload_claims (
	upload_id text    NOT NULL PRIMARY KEY REFERENCES uploads(id),
	entry_id  text    NOT NULL,
	form      text    NOT NULL,
	n         integer NOT NULL  -- the upload's place in the entry's data
);
CREATE INDEX upload_claims_entry ON upload_claims(entry_id, n);

-- formd_claim_uploads claims the uploads an entry's data lists under
-- _uploads for the entry, and returns '' when it took them all,
-- 'upload-used' when one is another entry's, 'upload-missing' when one is
-- not a complete upload of the form. An id listed twice is claimed once.
-- On a refusal the claims it took are given back.
CREATE FUNCTION formd_claim_uploads(p_id text, p_form text, p_data bytea) RETURNS text
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

-- formd_decide as in 0003, and a new entry claims the uploads its data
-- names before anything else is decided: an entry that cannot have its
-- files is decided upload-used or upload-missing, with no participant
-- claim, no place and no event.
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
