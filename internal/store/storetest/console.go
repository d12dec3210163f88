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

// testConsole: the console's reads. Counts by status, the per-minute
// chart, a bounded search that goes on where its scan stopped, one
// entry's detail, the arrival rate, and entries without their event.
func testConsole(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	putForm(t, s, "f", intp(2), store.StatusWaitlisted)
	base := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	var batch []journal.Entry
	for i := range 6 {
		e := sub("f", fmt.Sprint("k", i), uint64(i+1), fmt.Sprint("p", i%5)) // k5 claims p0 again: a duplicate
		e.ReceivedAt = base.Add(time.Duration(i/2)*time.Minute + time.Duration(i)*time.Second)
		e.Data = []byte(fmt.Sprintf(`{"phone":"+861380013800%d","name":"N%d"}`, i, i))
		e.Spam = i == 4
		batch = append(batch, e)
	}
	batch = append(batch, sub("g", "other", 100))
	out := mustApply(t, s, batch...)
	if got := statuses(out[:6]); !slices.Equal(got, []string{"stored", "stored", "waitlisted", "waitlisted", "spam", "duplicate"}) {
		t.Fatalf("decisions %v", got)
	}
	if _, err := s.Cancel(ctx, "f", out[0].ID); err != nil {
		t.Fatal(err)
	}
	counts, err := s.CountByStatus(ctx, "f")
	want := store.StatusCounts{"cancelled": 1, "stored": 2, "waitlisted": 1, "spam": 1, "duplicate": 1}
	if err != nil || fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("counts %v %v, want %v", counts, err, want)
	}
	if c, err := s.CountByStatus(ctx, "none"); err != nil || len(c) != 0 {
		t.Fatalf("counts of a form without entries: %v %v", c, err)
	}

	mins, err := s.EntriesPerMinute(ctx, "f", base, base.Add(2*time.Minute))
	if err != nil || len(mins) != 2 || !mins[0].Minute.Equal(base) || mins[0].N != 2 || !mins[1].Minute.Equal(base.Add(time.Minute)) || mins[1].N != 2 {
		t.Fatalf("per minute: %+v %v", mins, err)
	}

	// Search: a needle three entries hold, read two entries at a time.
	needle := [][]byte{[]byte(`"+86138001380`)}
	q := store.EntryQuery{Form: "f", Limit: 50}
	var keys []string
	for range 10 {
		rows, next, err := s.SearchEntries(ctx, q, needle, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		if next == (store.Cursor{}) {
			break
		}
		q.Before = next
	}
	if !slices.Equal(keys, []string{"k5", "k4", "k3", "k2", "k1", "k0"}) {
		t.Fatalf("search in bounded scans: %v", keys)
	}
	rows, next, err := s.SearchEntries(ctx, store.EntryQuery{Form: "f", Limit: 1}, [][]byte{[]byte(`"+8613800138003"`), []byte(`"N1"`)}, 100)
	if err != nil || len(rows) != 1 || rows[0].Key != "k3" || next != (store.Cursor{Seq: rows[0].Seq, ID: rows[0].ID}) {
		t.Fatalf("search, a full page: %+v %+v %v", rows, next, err)
	}
	rows, next, err = s.SearchEntries(ctx, store.EntryQuery{Form: "f", Statuses: []string{"waitlisted"}}, [][]byte{[]byte(`"N`)}, 100)
	if err != nil || len(rows) != 1 || rows[0].Key != "k3" || next != (store.Cursor{}) {
		t.Fatalf("search with a status filter: %+v %+v %v", rows, next, err)
	}

	d, err := s.Entry(ctx, "f", out[0].ID)
	if err != nil || d.Key != "k0" || d.Status != "cancelled" || d.Decision != "stored" || d.Receipt != batch[0].Fingerprint || d.Site != "site" ||
		d.DecidedAt.IsZero() || string(d.Data) != string(batch[0].Data) {
		t.Fatalf("entry detail: %+v %v", d, err)
	}
	if _, err := s.Entry(ctx, "g", out[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("entry of another form: %v", err)
	}

	// Arrivals: three keys pressed, two reached the server; one entry
	// came from a client without beacons.
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	if _, err := s.RecordArrivals(ctx, "a", store.ArrivalBatch{Reports: []store.Arrival{{Key: "a1", StartedAt: now}, {Key: "a2", StartedAt: now}, {Key: "a3", StartedAt: now}}}, now); err != nil {
		t.Fatal(err)
	}
	putForm(t, s, "a", nil, "")
	var arrived []journal.Entry
	for i, k := range []string{"a1", "a2", "a4"} {
		e := sub("a", k, uint64(200+i))
		e.ReceivedAt = now
		arrived = append(arrived, e)
	}
	mustApply(t, s, arrived...)
	hours, err := s.ArrivalStats(ctx, "a", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil || len(hours) != 1 || hours[0] != (store.ArrivalHour{Hour: now.Truncate(time.Hour), Started: 3, Reached: 2, Received: 3, Stored: 3}) {
		t.Fatalf("arrival stats: %+v %v", hours, err)
	}
	lost, err := s.UnreceivedArrivals(ctx, "a", now.Add(-time.Hour), now.Add(time.Hour), 10)
	if err != nil || len(lost) != 1 || lost[0].Key != "a3" || !lost[0].StartedAt.Equal(now) {
		t.Fatalf("unreceived: %+v %v", lost, err)
	}
	testArrivalBounds(t, s, now)

	// An erased entry still lists and reads, without its data.
	if n, err := s.EraseEntries(ctx, []string{out[1].ID}, nil); err != nil || n != 1 {
		t.Fatalf("erase: %d %v", n, err)
	}
	if d, err := s.Entry(ctx, "f", out[1].ID); err != nil || d.Data != nil || d.Key != "k1" {
		t.Fatalf("an erased entry's detail: %+v %v", d, err)
	}
	if rows, err := s.Entries(ctx, store.EntryQuery{Form: "f"}); err != nil || len(rows) != 6 {
		t.Fatalf("entries with an erased one: %d %v", len(rows), err)
	}

	// Every decision above wrote its event.
	if missing, err := s.EntriesWithoutEvent(ctx, "", 10); err != nil || len(missing) != 0 {
		t.Fatalf("entries without event: %+v %v", missing, err)
	}
}

// testArrivalBounds: reports that cannot show where they come from
// (KnownOnly) count only for keys the store has, the rest and the
// batch's own refusals add to the hour's refused count, and reports and
// counts older than ArrivalsKept are pruned.
func testArrivalBounds(t *testing.T, s store.Store, now time.Time) {
	ctx := ctxT(t)
	// a1 and a4 have entries; forged-1 and forged-2 do not.
	b := store.ArrivalBatch{KnownOnly: true, Refused: 5, Reports: []store.Arrival{
		{Key: "a4", StartedAt: now}, {Key: "forged-1", StartedAt: now}, {Key: "a1", AnsweredAt: now, State: "received"}, {Key: "forged-2", StartedAt: now},
	}}
	if dropped, err := s.RecordArrivals(ctx, "a", b, now); err != nil || dropped != 2 {
		t.Fatalf("known only: dropped %d, %v; want 2", dropped, err)
	}
	hours, err := s.ArrivalStats(ctx, "a", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil || len(hours) != 1 || hours[0].Started != 4 || hours[0].Reached != 3 {
		t.Fatalf("arrival stats with the forged keys: %+v %v, want a4 added (4 started, 3 reached) and no forged key", hours, err)
	}
	if n, err := s.ArrivalsRefused(ctx, "a", now.Add(-time.Hour), now.Add(time.Hour)); err != nil || n != 7 {
		t.Fatalf("refused: %d %v, want 5 + 2", n, err)
	}
	if n, err := s.ArrivalsRefused(ctx, "a", now.Add(time.Hour), now.Add(2*time.Hour)); err != nil || n != 0 {
		t.Fatalf("refused in the next hour: %d %v, want 0", n, err)
	}
	if n, err := s.ArrivalsRefused(ctx, "other", now.Add(-time.Hour), now.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("refused on another form: %d %v, want 0", n, err)
	}
	// Past ArrivalsKept, a report on the form prunes what is older.
	later := now.Add(store.ArrivalsKept + time.Hour)
	if _, err := s.RecordArrivals(ctx, "a", store.ArrivalBatch{Refused: 1}, later); err != nil {
		t.Fatal(err)
	}
	if hours, err := s.ArrivalStats(ctx, "a", now.Add(-time.Hour), now.Add(time.Hour)); err != nil || len(hours) != 1 || hours[0].Started != 0 {
		t.Fatalf("old reports after pruning: %+v %v, want none started (the entries stay)", hours, err)
	}
	if n, err := s.ArrivalsRefused(ctx, "a", now.Add(-time.Hour), later.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("refused after pruning: %d %v, want only the new 1", n, err)
	}
}
