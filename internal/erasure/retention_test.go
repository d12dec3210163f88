package erasure_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
)

type forms []*form.Form

func (f forms) All() []*form.Form { return f }

// Entries older than their form's retention lose their data in the store
// and their journal copy (once acknowledged); newer ones, and forms without
// retention, keep everything.
func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { j.Close() }() // the journal reopened below
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defs, err := form.Parse([]byte("id: short\nretention: 30d\nfields: [{name: x, type: text}]\n---\nid: forever\nfields: [{name: x, type: text}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	old, recent := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
	for _, c := range []struct {
		form, key string
		at        time.Time
	}{{"short", "old", old}, {"short", "recent", recent}, {"forever", "old", old}} {
		e := journaltest.NewEntry(c.form, c.key)
		e.Data = []byte(`{"name":"` + c.form + "-" + c.key + `-person"}`)
		e.ReceivedAt = old
		if c.at.Equal(recent) {
			e.ReceivedAt = recent
		}
		if _, err := j.Append(ctx, e, true); err != nil {
			t.Fatal(err)
		}
	}
	// Decide and acknowledge them, as the processor does, and close the
	// journal so that its watermark is saved.
	got, err := j.Fetch(ctx, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("fetch %d %v", len(got), err)
	}
	var subs []journal.Entry
	for _, e := range got {
		subs = append(subs, journal.Entry{Seq: e.Seq, ID: e.ID, Site: e.Site, Form: e.Form, Key: e.Key,
			Fingerprint: e.Fingerprint, ReceivedAt: e.ReceivedAt, Claims: e.Claims, Data: e.Data})
		if err := j.Ack(ctx, e.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Apply(ctx, subs); err != nil {
		t.Fatal(err)
	}
	// Drafts expire by their draft_ttl from their last save, whatever
	// their form's retention.
	for _, d := range []struct {
		key string
		ttl time.Duration
	}{{"draft-old", 24 * time.Hour}, {"draft-live", 30 * 24 * time.Hour}} {
		if _, err := s.SaveDraft(ctx, store.DraftSave{Form: "forever", Site: "site", Key: d.key, TokenHash: []byte(d.key),
			Data: []byte(`{"name":"` + d.key + `-person"}`), Now: now.Add(-2 * 24 * time.Hour), TTL: d.ttl}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j, err = sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	job := erasure.NewRetention(forms(defs), s, j, func() time.Time { return now }, slog.New(slog.DiscardHandler), nil)
	erased, pruned, err := job.RunOnce(ctx)
	if err != nil || erased != 1 || pruned != 1 {
		t.Fatalf("retention erased %d, pruned %d, %v; want 1 and 1", erased, pruned, err)
	}
	data := map[string]string{}
	for _, f := range []string{"short", "forever"} {
		s.Export(ctx, f, func(r store.Row) error { data[f+"/"+r.Key] = string(r.Data); return nil })
	}
	if data["short/old"] != "" || data["short/recent"] == "" || data["forever/old"] == "" {
		t.Fatalf("data after retention: %v", data)
	}
	if _, ok, _ := j.Lookup(ctx, "short", "old"); ok {
		t.Fatal("the old journal entry is still there")
	}
	if files := filesHolding(t, dir, "short-old-person"); len(files) > 0 {
		t.Fatalf("after retention %v still hold the erased data", files)
	}
	if files := filesHolding(t, dir, "draft-old-person"); len(files) > 0 {
		t.Fatalf("after retention %v still hold the expired draft", files)
	}
	if _, err := s.Draft(ctx, "forever", "draft-live", []byte("draft-live"), now); err != nil {
		t.Fatalf("a draft within its draft_ttl: %v", err)
	}
	if files := filesHolding(t, dir, "short-recent-person"); len(files) == 0 {
		t.Fatal("no file holds the recent entry's data: the scan cannot tell anything")
	}
	if _, ok, _ := j.Lookup(ctx, "short", "recent"); !ok {
		t.Fatal("a recent journal entry was pruned")
	}
	if o, ok, _ := s.Outcome(ctx, "short", "old"); !ok || o.Status != store.StatusStored {
		t.Fatalf("the erased entry's row must stay: %+v %v", o, ok)
	}
	if erased, pruned, err := job.RunOnce(ctx); err != nil || erased+pruned != 0 {
		t.Fatalf("second pass: %d %d %v", erased, pruned, err)
	}
}
