package storetest

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// FormFixture is what FillForm put in a form.
type FormFixture struct {
	// Uploads are the form's files: the stored entry's and one never sent.
	Uploads []string
	// Contents is what FormContents must count.
	Contents store.FormContents
}

// FillForm gives form f one of everything a form holds: a stored entry
// with a file and a participant's claim, a waitlisted and a cancelled
// entry, their events fanned out to a webhook (pending deliveries, one
// tried once), a
// check-in, a dead letter, a saved draft, a file uploaded and never
// sent. Drivers' tests use it to check, table by table, that PurgeForm
// leaves nothing of the form.
func FillForm(t *testing.T, s UploadStore, f string) FormFixture {
	t.Helper()
	ctx := ctxT(t)
	putForm(t, s, f, intp(1), store.StatusWaitlisted)
	withFile := newUpload(t, s, f, true)
	unsent := newUpload(t, s, f, false)
	a := withUploads(f, "a", 1, withFile.ID)
	a.Claims = []string{"p-" + f}
	b, c := sub(f, "b", 2), sub(f, "c", 3)
	out := mustApply(t, s, a, b, c)
	if got := statuses(out); got[0] != store.StatusStored || got[1] != store.StatusWaitlisted || got[2] != store.StatusWaitlisted {
		t.Fatalf("the fixture's decisions: %v", got)
	}
	if _, err := s.Cancel(ctx, f, c.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	if r, err := s.CheckIn(ctx, store.Scan{Form: f, EntryID: a.ID, Key: "scan-" + f, Door: "A", ScannedAt: now}); err != nil || r.Result != store.CheckedIn {
		t.Fatalf("check in: %+v %v", r, err)
	}
	if _, err := s.DeadLetter(ctx, sub(f, "d", 4), "poison", 3); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	if _, err := s.SaveDraft(ctx, store.DraftSave{Form: f, Site: "site", Key: "draft-" + f, TokenHash: []byte("hash-" + f),
		Data: json.RawMessage(`{"name":"Ann"}`), Now: now, TTL: time.Hour}); err != nil {
		t.Fatalf("save draft: %v", err)
	}
	var (
		events int64
		last   store.Event
	)
	hook := "https://hook.example/" + f
	for _, e := range fanOut(t, s, now, hook) {
		if e.Form == f {
			events++
			last = e
		}
	}
	if events == 0 {
		t.Fatal("no events fanned out")
	}
	// One delivery was tried once and waits to be tried again.
	key := store.DeliveryKey{EventSeq: last.Seq, Endpoint: hook}
	if err := s.FinishDeliveries(ctx, []store.Finish{{DeliveryKey: key, Owner: "test", State: "pending", NextAt: now.Add(time.Hour), Counted: true,
		Attempt: store.Attempt{DeliveryKey: key, At: now, Status: 503, Outcome: attempt.Retry, Excerpt: "busy"}}}, now); err != nil {
		t.Fatalf("finish a delivery: %v", err)
	}
	return FormFixture{
		Uploads: []string{withFile.ID, unsent.ID},
		Contents: store.FormContents{
			Entries: map[string]int64{store.StatusStored: 1, store.StatusWaitlisted: 1, store.StatusCancelled: 1},
			Files:   2, PendingDeliveries: events, DeadLetters: 1, Drafts: 1, Checkins: 1,
		},
	}
}

// PurgeAll runs PurgeForm in chunks of limit until a chunk comes back
// short, and says how many chunks it took.
func PurgeAll(t *testing.T, s store.Store, f string, limit int) int {
	t.Helper()
	for i := 1; i <= 100; i++ {
		n, err := s.PurgeForm(ctxT(t), f, limit)
		if err != nil {
			t.Fatalf("purge %s: %v", f, err)
		}
		if n < limit {
			return i
		}
	}
	t.Fatalf("purge %s: still deleting after 100 chunks", f)
	return 0
}

func mustContents(t *testing.T, s store.Store, f string) store.FormContents {
	t.Helper()
	c, err := s.FormContents(ctxT(t), f)
	if err != nil {
		t.Fatalf("contents of %s: %v", f, err)
	}
	return c
}

func sameContents(a, b store.FormContents) bool {
	return maps.Equal(a.Entries, b.Entries) && a.Files == b.Files && a.PendingDeliveries == b.PendingDeliveries &&
		a.DeadLetters == b.DeadLetters && a.Drafts == b.Drafts && a.Checkins == b.Checkins
}

// testFormPurge: a form with one of everything is counted, then purged
// in small chunks; nothing of it is left, its files' bytes are queued
// for deletion, another form is untouched, a second run does nothing,
// and the id, once the form is deleted, is a fresh form's.
func testFormPurge(t *testing.T, s UploadStore) {
	ctx := ctxT(t)
	gone := FillForm(t, s, "gone")
	kept := FillForm(t, s, "kept")
	if c := mustContents(t, s, "gone"); !sameContents(c, gone.Contents) {
		t.Fatalf("contents %+v, want %+v", c, gone.Contents)
	}
	if ok, err := s.DeleteEmptyForm(ctx, "gone"); ok || err != nil {
		t.Fatalf("delete before the purge: %v %v, want refused", ok, err)
	}
	if n := PurgeAll(t, s, "gone", 2); n < 2 {
		t.Fatalf("purged in %d chunk of 2: the chunk is not bounded", n)
	}
	if c := mustContents(t, s, "gone"); !c.Empty() {
		t.Fatalf("after the purge: %+v", c)
	}
	if n, err := s.PurgeForm(ctx, "gone", 2); n != 0 || err != nil {
		t.Fatalf("a second purge: %d %v, want nothing done", n, err)
	}
	if c := mustContents(t, s, "kept"); !sameContents(c, kept.Contents) {
		t.Fatalf("the other form: %+v, want %+v", c, kept.Contents)
	}
	for _, id := range gone.Uploads {
		if _, err := s.Upload(ctx, id); !errors.Is(err, store.ErrUploadNotFound) {
			t.Fatalf("upload %s stays: %v", id, err)
		}
	}
	for _, id := range kept.Uploads {
		mustUpload(t, s, id)
	}
	queued := map[string]bool{}
	ds, err := s.PendingDeletions(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		queued[d.ID] = true
	}
	for _, id := range gone.Uploads {
		if !queued[id] {
			t.Fatalf("the bytes of %s are not queued for deletion: %v", id, ds)
		}
	}
	for _, id := range kept.Uploads {
		if queued[id] {
			t.Fatalf("the other form's file %s is queued for deletion", id)
		}
	}
	if _, ok, err := s.Outcome(ctx, "gone", "a"); ok || err != nil {
		t.Fatalf("the purged form's key is still decided: %v %v", ok, err)
	}
	if dls, err := s.DeadLetters(ctx, 100); err != nil || len(dls) != 1 || dls[0].Form != "kept" {
		t.Fatalf("dead letters %+v %v, want the other form's", dls, err)
	}
	if ok, err := s.DeleteEmptyForm(ctx, "gone"); !ok || err != nil {
		t.Fatalf("delete after the purge: %v %v", ok, err)
	}
	if err := s.PublishForms(ctx, []form.Record{{ID: "gone", Site: "site", Source: []byte("id: gone"), WhenFull: "reject"}},
		store.FormNote{Action: "form.create", Create: true}); err != nil {
		t.Fatalf("the id again: %v", err)
	}
	if o := mustApply(t, s, sub("gone", "a", 10, "p-gone"))[0]; o.Replayed || o.Status != store.StatusStored {
		t.Fatalf("the new form's first entry: %+v, want a fresh stored entry", o)
	}
}

// Count is the count func of CheckPurge and RunErasureNoticeKept over a
// driver's own connection (queryRow): the number a count query answers,
// failing t when it cannot be read.
func Count(t *testing.T, queryRow func(q string) store.Scanner) func(q string) int {
	return func(q string) int {
		var n int
		if err := queryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
}

// FormTables reads the rows of a driver's catalog query (a table and its
// form or entry_id column each) into the tables of CheckPurge.
func FormTables(t *testing.T, rows store.Rows) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// CheckPurge fills forms gone and kept (FillForm), purges and deletes
// gone, and checks with count (a count(*) query on the driver's
// database) that none of the tables — each with its form and entry_id
// columns, read from the driver's catalog — holds a row of gone, that
// kept's rows are all there, and that no delivery attempt is left
// without its event. The audit log keeps that the form was deleted, and
// endpoints_disabled an address's state, which other forms share.
func CheckPurge(t *testing.T, s UploadStore, count func(q string) int, tables map[string][]string) {
	t.Helper()
	if len(tables) < 10 {
		t.Fatalf("the catalog lists %d tables of forms: %v", len(tables), tables)
	}
	FillForm(t, s, "gone")
	FillForm(t, s, "kept")
	rows := func(f string) map[string]int {
		out := map[string]int{}
		for table, cols := range tables {
			if table == "audit_log" || table == "endpoints_disabled" {
				continue
			}
			where := ""
			for _, c := range cols {
				if where != "" {
					where += " OR "
				}
				if c == "form" {
					where += "form = '" + f + "'"
				} else {
					// storetest's entry ids begin with their form's.
					where += "entry_id LIKE '" + f + "-%'"
				}
			}
			out[table] = count(`SELECT count(*) FROM ` + table + ` WHERE ` + where)
		}
		return out
	}
	attempts := func() int {
		return count(`SELECT count(*) FROM delivery_attempts`)
	}
	before, attemptsBefore := rows("kept"), attempts()
	if before["entries"] == 0 || before["events"] == 0 || before["uploads"] == 0 || attemptsBefore != 2 {
		t.Fatalf("the fixture: %v, %d attempts", before, attemptsBefore)
	}
	PurgeAll(t, s, "gone", 3)
	if ok, err := s.DeleteEmptyForm(ctxT(t), "gone"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	for table, n := range rows("gone") {
		if n != 0 {
			t.Errorf("%s holds %d rows of the deleted form", table, n)
		}
	}
	for table, n := range rows("kept") {
		if before[table] != n {
			t.Errorf("%s: the other form's rows went from %d to %d", table, before[table], n)
		}
	}
	if n := attempts(); n != 1 {
		t.Errorf("%d delivery attempts left, want the other form's one", n)
	}
	if n := count(`SELECT count(*) FROM delivery_attempts WHERE event_seq NOT IN (SELECT seq FROM events)`); n != 0 {
		t.Errorf("%d delivery attempts of no event", n)
	}
}
