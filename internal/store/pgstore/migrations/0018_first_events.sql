-- Entries decided before the outbox (releases before 0003_outbox.sql, such
-- as b3f9691, the first) have no event, and the audit counts each as an
-- entry without its first event. Each gets the event its decision would
-- have written, as already fanned out: no webhook could hear of it then,
-- and announcing an old registration now would mislead the receiver.
INSERT INTO events(entry_id, n, type, form, site, status, at, fanned)
	SELECT e.id, 1, 'submission.' || e.decision, e.form, e.site, e.decision, e.decided_at, true
	FROM entries e
	WHERE e.status IN ('stored', 'waitlisted', 'spam', 'cancelled') AND e.decision IN ('stored', 'waitlisted', 'spam')
		AND NOT EXISTS (SELECT 1 FROM events v WHERE v.entry_id = e.id)
	ORDER BY e.seq, e.id;
