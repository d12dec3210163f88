package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Entries as they are read back: events and their times, pages,
// exports, spam reclassified.

// testEventTimes: every event takes its time from the store's clock, the
// promotions a cancel or a larger capacity makes included.
func testEventTimes(t *testing.T, s store.Store, clock *Clock) {
	ctx := ctxT(t)
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	decided := clock.Now()
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pc"))
	clock.Advance(time.Hour)
	cancelled := clock.Now()
	if _, err := s.Cancel(ctx, "f", out[0].ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	grown := clock.Now()
	putForm(t, s, "f", intp(2), store.StatusWaitlisted)
	for _, tc := range []struct {
		id   string
		want []time.Time
	}{
		{out[0].ID, []time.Time{decided, cancelled}},
		{out[1].ID, []time.Time{decided, cancelled}},
		{out[2].ID, []time.Time{decided, grown}},
	} {
		evs, err := s.History(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		for _, e := range evs {
			got = append(got, e.At.UTC())
		}
		if !slices.EqualFunc(got, tc.want, time.Time.Equal) {
			t.Errorf("event times of %s: %v, want %v (history %+v)", tc.id, got, tc.want, evs)
		}
	}
}

// testExport: every entry of the form once, in (seq, id) order, also when
// entries sharing a seq straddle a page (the boundaries after ExportPage
// and 2*ExportPage rows fall inside a group of three).
func testExport(t *testing.T, s store.Store) {
	want := ids(sharedSeqs(t, s, "f", 2*store.ExportPage+4))
	mustApply(t, s, sub("other", "x", 5), sub("other", "y", uint64(store.ExportPage/3)))
	var got []string
	err := s.Export(ctxT(t), "f", func(r store.Row) error {
		if r.Form != "f" || len(r.Data) == 0 || r.ReceivedAt.IsZero() || r.Key == "" {
			return fmt.Errorf("row %+v", r)
		}
		got = append(got, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		seen := map[string]int{}
		for _, id := range got {
			seen[id]++
		}
		var twice, missing []string
		for _, id := range want {
			switch seen[id] {
			case 0:
				missing = append(missing, id)
			case 1:
			default:
				twice = append(twice, id)
			}
		}
		t.Fatalf("exported %d of %d entries; missing %v, twice %v (or out of (seq, id) order)", len(got), len(want), missing, twice)
	}
}

// testEntryPagesSharedSeqs: pages of one and of two entries, newest first,
// go through entries that share a seq without skipping or repeating one.
func testEntryPagesSharedSeqs(t *testing.T, s store.Store) {
	want := ids(sharedSeqs(t, s, "f", 8))
	slices.Reverse(want)
	for _, limit := range []int{1, 2, 3} {
		var got []string
		q := store.EntryQuery{Form: "f", Limit: limit}
		for range 20 {
			page, err := s.Entries(ctxT(t), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			if len(page) < limit {
				break
			}
			last := page[len(page)-1]
			q.Before = store.Cursor{Seq: last.Seq, ID: last.ID}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
}

// testSameTimeByID: entries received at the same instant are found and
// erased oldest first by id, whatever the order they were decided in.
func testSameTimeByID(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	at := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	for _, k := range []string{"c", "a", "b"} {
		e := sub("f", k, 1, "p"+k)
		e.ID = "same-" + k
		e.ReceivedAt = at
		e.Data = []byte(`{"x":"needle"}`)
		mustApply(t, s, e)
	}
	found, err := s.FindEntries(ctx, [][]byte{[]byte("needle")}, 2)
	if err != nil || len(found) != 2 || found[0].ID != "same-a" || found[1].ID != "same-b" {
		t.Fatalf("found %+v %v, want same-a and same-b", found, err)
	}
	if n, err := s.Erase(ctx, "f", at.Add(time.Second), 1); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	found, err = s.FindEntries(ctx, [][]byte{[]byte("needle")}, 10)
	if err != nil || len(found) != 2 || found[0].ID != "same-b" || found[1].ID != "same-c" {
		t.Fatalf("after erasing one: %+v %v, want same-a erased", found, err)
	}
}

// testEvents: each decision that makes or changes an entry writes its
// event in the same transaction; replays and refusals write none.
func testEvents(t *testing.T, s store.Store) {
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	out := mustApply(t, s, sub("f", "a", 1, "pa"), sub("f", "b", 2, "pb"), sub("f", "c", 3, "pa"))
	spam := sub("f", "d", 4, "pd")
	spam.Spam = true
	spamOut := mustApply(t, s, spam)[0]
	mustApply(t, s, sub("f", "a", 1, "pa")) // a replay
	for id, want := range map[string][]string{
		out[0].ID:  {"stored:stored"},
		out[1].ID:  {"waitlisted:waitlisted"},
		out[2].ID:  nil, // a duplicate is no entry
		spamOut.ID: {"spam:spam"},
	} {
		if got := history(t, s, id); !slices.Equal(got, want) {
			t.Fatalf("history of %s: %v, want %v", id, got, want)
		}
	}
	mustCancel(t, s, "f", out[0].ID)
	if got := history(t, s, out[0].ID); !slices.Equal(got, []string{"stored:stored", "cancelled:cancelled"}) {
		t.Fatalf("after cancel: %v", got)
	}
	if got := history(t, s, out[1].ID); !slices.Equal(got, []string{"waitlisted:waitlisted", "promoted:stored"}) {
		t.Fatalf("after promotion: %v", got)
	}
	evs, _ := s.History(ctxT(t), out[1].ID)
	if evs[0].ID() == evs[1].ID() || evs[0].Seq >= evs[1].Seq {
		t.Fatalf("event ids and order: %+v", evs)
	}
}

// testSpamReclassify: an owner's "not spam" decides a spam entry again as
// a real submission; "spam" takes a live one out and frees its place.
func testSpamReclassify(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", intp(1), store.StatusWaitlisted)
	bot := sub("f", "bot", 1, "p-bot")
	bot.Spam = true
	person := sub("f", "person", 2, "p-person")
	person.Spam = true
	outs := mustApply(t, s, bot, person)
	o, err := s.NotSpam(ctx, "f", outs[1].ID)
	if err != nil || o.Status != store.StatusStored || o.Decision != store.StatusStored || o.Key != "person" {
		t.Fatalf("not spam: %+v %v, want stored", o, err)
	}
	if got := mustOutcome(t, s, "f", "person"); got.Decision != store.StatusStored || got.Status != store.StatusStored {
		t.Fatalf("the key's outcome after not spam: %+v", got)
	}
	if _, err := s.NotSpam(ctx, "f", outs[1].ID); !errors.Is(err, store.ErrNotSpam) {
		t.Fatalf("not spam twice: %v, want ErrNotSpam", err)
	}
	// The only place is taken now: the next real submission waits.
	if o := mustApply(t, s, sub("f", "later", 3, "p-later"))[0]; o.Status != store.StatusWaitlisted {
		t.Fatalf("after not spam the place is taken: %+v", o)
	}
	promoted, err := s.MarkSpam(ctx, "f", outs[1].ID)
	if err != nil || len(promoted) != 1 {
		t.Fatalf("mark spam: %v %v, want the waitlisted entry promoted", promoted, err)
	}
	if got := mustOutcome(t, s, "f", "person"); got.Status != store.StatusSpam || got.Decision != store.StatusSpam {
		t.Fatalf("after mark spam: %+v", got)
	}
	if got := history(t, s, outs[1].ID); !slices.Equal(got, []string{"spam:spam", "stored:stored", "cancelled:spam"}) {
		t.Fatalf("history: %v", got)
	}
	// Its participant is free again.
	if o := mustApply(t, s, sub("f", "again", 4, "p-person"))[0]; o.Status == store.StatusDuplicate {
		t.Fatalf("after mark spam the claim still holds: %+v", o)
	}
	if _, err := s.MarkSpam(ctx, "f", outs[0].ID); !errors.Is(err, store.ErrNotLive) {
		t.Fatalf("mark spam of spam: %v, want ErrNotLive", err)
	}
	if _, err := s.NotSpam(ctx, "f", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("not spam of no entry: %v", err)
	}
}

// testEntryPages: a form's entries newest first, filtered by status and
// time, a page at a time by keyset.
func testEntryPages(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", nil, "")
	base := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	var batch []journal.Entry
	for i := range 7 {
		e := sub("f", fmt.Sprint("k", i), uint64(i+1))
		e.ReceivedAt = base.Add(time.Duration(i) * time.Minute)
		e.Spam = i%3 == 0 // k0, k3, k6
		batch = append(batch, e)
	}
	batch = append(batch, sub("g", "other", 100))
	mustApply(t, s, batch...)
	var keys []string
	q := store.EntryQuery{Form: "f", Limit: 3}
	for {
		page, err := s.Entries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			keys = append(keys, r.Key)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.Before = store.Cursor{Seq: last.Seq, ID: last.ID}
	}
	if want := []string{"k6", "k5", "k4", "k3", "k2", "k1", "k0"}; !slices.Equal(keys, want) {
		t.Fatalf("pages: %v, want %v", keys, want)
	}
	spam, err := s.Entries(ctx, store.EntryQuery{Form: "f", Statuses: []string{store.StatusSpam}})
	if err != nil || len(spam) != 3 || spam[0].Key != "k6" || spam[0].Status != store.StatusSpam || len(spam[0].Data) == 0 {
		t.Fatalf("spam: %+v %v", spam, err)
	}
	window, err := s.Entries(ctx, store.EntryQuery{Form: "f", Since: base.Add(2 * time.Minute), Until: base.Add(4 * time.Minute)})
	if err != nil || len(window) != 2 || window[0].Key != "k3" || window[1].Key != "k2" {
		t.Fatalf("time window: %+v %v", window, err)
	}
}
