package store

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// FormPurge deletes everything a form holds so that the form itself can
// be deleted (DeleteEmptyForm): the organizer's typed confirmation of
// deleting a form with entries (admin.DeleteForm). Both drivers run the
// statements below, in their dialect's placeholders, so that they erase
// the same rows.
type FormPurge interface {
	// FormContents counts what deleting the form would erase.
	FormContents(ctx context.Context, form string) (FormContents, error)
	// PurgeForm deletes up to limit of the form's entries with every
	// row that belongs to them (claims, versions, events and their
	// deliveries, check-ins, erasure requests, file records: the files'
	// bytes are queued for deletion as an erased entry's are) in one
	// transaction; once no entry is left, it deletes up to limit rows of
	// each of the form's other tables (dead letters, drafts, arrivals,
	// refusal tallies, spam notes, spent challenges, unclaimed uploads,
	// leftover events). It returns how many rows it deleted: repeat it
	// until that is less than limit. It is idempotent, and a run cut off
	// leaves no row without the rows it belongs to.
	PurgeForm(ctx context.Context, form string, limit int) (int, error)
}

// FormContents is what a form holds, as the organizer is told before
// deleting it.
type FormContents struct {
	// Entries counts the form's entries by status (stored, waitlisted,
	// cancelled, spam, …), dead letters apart.
	Entries map[string]int64 `json:"entries"`
	// Files counts its files: those of its entries and those uploaded
	// and never sent.
	Files int64 `json:"files"`
	// PendingDeliveries are webhook and e-mail deliveries not yet made.
	PendingDeliveries int64 `json:"pending_deliveries"`
	DeadLetters       int64 `json:"dead_letters"`
	Drafts            int64 `json:"drafts"`
	Checkins          int64 `json:"checkins"`
}

// EntryCount is the number of entries of every status.
func (c FormContents) EntryCount() int64 {
	var n int64
	for _, v := range c.Entries {
		n += v
	}
	return n
}

// Empty says the form holds nothing that deleting it would erase.
func (c FormContents) Empty() bool {
	return c.EntryCount() == 0 && c.Files == 0 && c.PendingDeliveries == 0 && c.DeadLetters == 0 && c.Drafts == 0 && c.Checkins == 0
}

// Summary says what the form holds in words, for an answer and the
// audit log: "3 entries (1 cancelled, 1 stored, 1 waitlisted), 2 files,
// …", the kinds it holds none of left out.
func (c FormContents) Summary() string {
	var parts []string
	add := func(n int64, one, many string) {
		if n == 1 {
			parts = append(parts, "1 "+one)
		} else if n > 1 {
			parts = append(parts, strconv.FormatInt(n, 10)+" "+many)
		}
	}
	if n := c.EntryCount(); n > 0 {
		var by []string
		for _, st := range slices.Sorted(maps.Keys(c.Entries)) {
			by = append(by, strconv.FormatInt(c.Entries[st], 10)+" "+st)
		}
		add(n, "entry", "entries")
		parts[0] += " (" + strings.Join(by, ", ") + ")"
	}
	add(c.Files, "file", "files")
	add(c.PendingDeliveries, "pending delivery", "pending deliveries")
	add(c.DeadLetters, "dead letter", "dead letters")
	add(c.Drafts, "draft", "drafts")
	add(c.Checkins, "check-in", "check-ins")
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// FormContentsQuery counts a form's rows other than its entries, in the
// order of FormContents' fields (1: the form).
func FormContentsQuery(ph func(n int) string) string {
	f := ph(1)
	return `SELECT (SELECT count(*) FROM uploads WHERE form = ` + f + `),
		(SELECT count(*) FROM deliveries WHERE form = ` + f + ` AND state = 'pending'),
		(SELECT count(*) FROM dead_letters WHERE form = ` + f + `),
		(SELECT count(*) FROM drafts WHERE form = ` + f + `),
		(SELECT count(*) FROM checkins WHERE form = ` + f + `)`
}

// FormEntryStatusQuery counts a form's entries by status (1: the form);
// a dead letter's row is counted as a dead letter.
func FormEntryStatusQuery(ph func(n int) string) string {
	return `SELECT status, count(*) FROM entries WHERE form = ` + ph(1) + ` AND status != '` + StatusDeadLettered + `' GROUP BY status ORDER BY status`
}

// CountEntries reads the rows of FormEntryStatusQuery, a status and its
// count each, into counts.
func CountEntries(rows Rows, counts map[string]int64) error {
	for rows.Next() {
		var (
			status string
			n      int64
		)
		if err := rows.Scan(&status, &n); err != nil {
			return err
		}
		counts[status] = n
	}
	return rows.Err()
}

// PurgeStatement is one statement of PurgeForm in the dialect's
// placeholders, numbered from 1 in the order of Args.
type PurgeStatement struct {
	SQL  string
	Args []PurgeArg
}

// PurgeArg names a value a PurgeStatement takes.
type PurgeArg int

// The values of PurgeForm's statements.
const (
	// PurgeTime is the store clock's time, in the dialect's time column
	// type: when the files' deletion is queued.
	PurgeTime PurgeArg = iota
	// PurgeFormID is the form's id.
	PurgeFormID
	// PurgeLimit is the chunk's size.
	PurgeLimit
)

// purgeMarkers are the markers the statements below are written with.
var purgeMarkers = []struct {
	marker string
	arg    PurgeArg
}{{"{time}", PurgeTime}, {"{form}", PurgeFormID}, {"{limit}", PurgeLimit}}

// purgeStatement numbers a statement's markers in their order.
func purgeStatement(ph func(n int) string, sql string) PurgeStatement {
	var st PurgeStatement
	for {
		first, at := -1, len(sql)
		for i, m := range purgeMarkers {
			if j := strings.Index(sql, m.marker); j >= 0 && j < at {
				first, at = i, j
			}
		}
		if first < 0 {
			st.SQL = sql
			return st
		}
		st.Args = append(st.Args, purgeMarkers[first].arg)
		sql = strings.ReplaceAll(sql, purgeMarkers[first].marker, ph(len(st.Args)))
	}
}

// PurgeSelect fills the driver's temporary table purging(id) with up to
// limit entries of the form.
func PurgeSelect(ph func(n int) string) PurgeStatement {
	return purgeStatement(ph, `INSERT INTO purging(id) SELECT id FROM entries WHERE form = {form} ORDER BY id LIMIT {limit}`)
}

// PurgeEntryStatements delete the entries in purging with every row
// that belongs to them, children first. A file's record goes as
// DropErasedUpload takes it: its claim and record deleted, its bytes
// queued in upload_deletions for the uploads pass.
func PurgeEntryStatements(ph func(n int) string) []PurgeStatement {
	const target = `(SELECT id FROM purging)`
	return purgeStatements(ph,
		`INSERT INTO upload_deletions(upload_id, queued_at) SELECT upload_id, {time} FROM upload_claims WHERE entry_id IN `+target+`
			ON CONFLICT (upload_id) DO UPDATE SET queued_at = excluded.queued_at`,
		`DELETE FROM upload_claims WHERE entry_id IN `+target,
		// The records queued now (and by nothing else: every other path
		// deletes the record in the transaction that queues it).
		`DELETE FROM uploads WHERE form = {form} AND id IN (SELECT upload_id FROM upload_deletions)
			AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = uploads.id)`,
		`DELETE FROM delivery_attempts WHERE event_seq IN (SELECT seq FROM events WHERE entry_id IN `+target+`)`,
		`DELETE FROM deliveries WHERE event_seq IN (SELECT seq FROM events WHERE entry_id IN `+target+`)`,
		`DELETE FROM events WHERE entry_id IN `+target,
		`DELETE FROM claims WHERE entry_id IN `+target,
		`DELETE FROM entry_versions WHERE entry_id IN `+target,
		`DELETE FROM erasure_requests WHERE entry_id IN `+target,
		`DELETE FROM checkin_scans WHERE entry_id IN `+target,
		`DELETE FROM checkins WHERE entry_id IN `+target,
		`DELETE FROM entries WHERE id IN `+target,
	)
}

func purgeStatements(ph func(n int) string, sqls ...string) []PurgeStatement {
	out := make([]PurgeStatement, len(sqls))
	for i, q := range sqls {
		out[i] = purgeStatement(ph, q)
	}
	return out
}

// purgeTables are the form's tables other than entries and what belongs
// to them, with their keys. The audit log is kept (it records that the
// form was deleted), and so are endpoints_disabled: an address's state,
// which the form's site and its other forms share.
var purgeTables = []struct{ table, key string }{
	{"claims", "form, claim"},
	{"dead_letters", "entry_id"},
	{"drafts", "form, key"},
	{"arrivals", "form, key"},
	{"arrival_refusals", "form, hour"},
	{"intake_refusals", "form, hour, reason"},
	{"spam_reasons", "form, key"},
	{"challenge_uses", "signature"},
	{"checkin_scans", "form, key"},
	{"checkins", "entry_id"},
	{"erasure_requests", "entry_id"},
}

// PurgeFormStatements delete up to limit rows of each of the form's
// other tables, children first; they run once no entry of the form is
// left.
func PurgeFormStatements(ph func(n int) string) []PurgeStatement {
	qs := []string{
		// Files uploaded and never sent.
		`INSERT INTO upload_deletions(upload_id, queued_at) SELECT id, {time} FROM uploads u WHERE form = {form}
			AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = u.id) ORDER BY id LIMIT {limit}
			ON CONFLICT (upload_id) DO UPDATE SET queued_at = excluded.queued_at`,
		`DELETE FROM uploads WHERE form = {form} AND id IN (SELECT upload_id FROM upload_deletions)
			AND NOT EXISTS (SELECT 1 FROM upload_claims c WHERE c.upload_id = uploads.id)`,
		// Events of no entry left, with their deliveries.
		`DELETE FROM delivery_attempts WHERE event_seq IN (SELECT event_seq FROM deliveries WHERE form = {form} ORDER BY event_seq, endpoint LIMIT {limit})`,
		`DELETE FROM deliveries WHERE (event_seq, endpoint) IN (SELECT event_seq, endpoint FROM deliveries WHERE form = {form} ORDER BY event_seq, endpoint LIMIT {limit})`,
		`DELETE FROM events WHERE seq IN (SELECT seq FROM events e WHERE form = {form}
			AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq) ORDER BY seq LIMIT {limit})`,
	}
	for _, pt := range purgeTables {
		key := pt.key
		if strings.Contains(key, ",") {
			key = "(" + key + ")"
		}
		qs = append(qs, `DELETE FROM `+pt.table+` WHERE `+key+` IN (SELECT `+pt.key+` FROM `+pt.table+` WHERE form = {form} LIMIT {limit})`)
	}
	return purgeStatements(ph, qs...)
}

// Bind gives the statement's values in its placeholders' order; now is
// in the driver's time column type.
func (st PurgeStatement) Bind(now any, form string, limit int) []any {
	out := make([]any, len(st.Args))
	for i, a := range st.Args {
		switch a {
		case PurgeTime:
			out[i] = now
		case PurgeFormID:
			out[i] = form
		case PurgeLimit:
			out[i] = limit
		}
	}
	return out
}
