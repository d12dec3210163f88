// Package journaltest is the conformance suite that every journal driver
// passes. A driver's test calls Run with a function that opens the driver on
// fresh storage; the suite reopens the same storage to check what survives.
package journaltest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/poll"
)

// Opener returns a function that opens the journal on one fresh storage
// location; each call of the returned function opens that same location
// again (after the previous journal was closed).
type Opener func(t *testing.T) func() journal.Journal

// Run runs the suite.
func Run(t *testing.T, newJournal Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, func() journal.Journal)
	}{
		{"AppendFetchRoundTrip", testRoundTrip},
		{"DuplicateKey", testDuplicateKey},
		{"ConcurrentAppends", testConcurrentAppends},
		{"AckAndBacklog", testAckAndBacklog},
		{"NakRedelivers", testNak},
		{"Lookup", testLookup},
		{"ReadFilters", testRead},
		{"PendingRedelivers", testPending},
		{"ReopenRedeliversUnacked", testReopen},
		{"ClosedRefusesAppends", testClosed},
		{"FetchWaitsForAppend", testFetchWaits},
		{"AsyncAppend", testAsyncAppend},
		{"AsyncAppendsSurviveClose", testAsyncAppendsSurviveClose},
		// Capabilities a driver may lack: each case skips, naming the
		// interface, on a driver without it.
		{"Pruner", testPruner},
		{"Forgetter", testForgetter},
		{"Writability", testWritability},
		{"FormCounter", testFormCounter},
		{"OutcomeBus", testOutcomeBus},
		{"LaxDurability", testLaxDurability},
		{"Liveness", testLiveness},
		{"Sizer", testSizer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newJournal(t))
		})
	}
}

// capability returns j as the capability C, or skips the test, naming C,
// when the driver does not have it.
func capability[C any](t *testing.T, j journal.Journal) C {
	t.Helper()
	c, ok := j.(C)
	if !ok {
		t.Skipf("%T has no %v", j, reflect.TypeFor[C]())
	}
	return c
}

// testForgetter: a journal that can forget an entry does so only once it
// is acknowledged; afterwards nothing of it is found, and forgetting it
// again, or an entry that never was, is no error.
func testForgetter(t *testing.T, open func() journal.Journal) {
	j := open()
	defer j.Close()
	fg := capability[journal.Forgetter](t, j)
	ctx := ctxT(t)
	e := NewEntry("f", "forget-me")
	keep := NewEntry("f", "keep-me")
	for _, x := range []journal.Entry{e, keep} {
		if _, err := j.Append(ctx, x, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := fg.Forget(ctx, "f", "forget-me"); !errors.Is(err, journal.ErrPending) {
		t.Fatalf("forget before delivery: %v, want ErrPending", err)
	}
	got := fetchN(t, j, 2)
	if err := fg.Forget(ctx, "f", "forget-me"); !errors.Is(err, journal.ErrPending) {
		t.Fatalf("forget while in flight: %v, want ErrPending", err)
	}
	for _, x := range got {
		if err := j.Ack(ctx, x.Seq); err != nil {
			t.Fatal(err)
		}
	}
	// Acks reach a remote server asynchronously: Forget may still find
	// the entry pending for a moment, and nothing else.
	poll.UntilNil(t, "forget once acknowledged", 10*time.Second, func() error {
		err := fg.Forget(ctx, "f", "forget-me")
		if err != nil && !errors.Is(err, journal.ErrPending) {
			t.Fatalf("forget once acknowledged: %v", err)
		}
		return err
	})
	if _, found, err := j.Lookup(ctx, "f", "forget-me"); err != nil || found {
		t.Fatalf("lookup after forget: found %v, %v", found, err)
	}
	if _, found, _ := j.Lookup(ctx, "f", "keep-me"); !found {
		t.Fatal("another entry was forgotten too")
	}
	n := 0
	if err := j.Read(ctx, journal.Filter{Form: "f"}, func(journal.Entry) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("read after forget: %d entries, %v; want the one kept", n, err)
	}
	for _, k := range []string{"forget-me", "never-was"} {
		if err := fg.Forget(ctx, "f", k); err != nil {
			t.Fatalf("forget %s: %v", k, err)
		}
	}
}

// NewEntry makes a distinct, valid entry for form and key.
func NewEntry(form, key string) journal.Entry {
	return journal.Entry{
		ID:          "id-" + form + "-" + key,
		Site:        "site-a",
		Form:        form,
		Key:         key,
		Fingerprint: sha256.Sum256([]byte(form + "/" + key)),
		ReceivedAt:  time.Now().UTC().Truncate(time.Microsecond),
		Claims:      []string{"c1-" + key, "c2-" + key},
		Data:        []byte(`{"name":"` + key + `"}`),
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAppend(t *testing.T, j journal.Journal, e journal.Entry) journal.Appended {
	t.Helper()
	a, err := j.Append(ctxT(t), e, true)
	if err != nil {
		t.Fatalf("append %s/%s: %v", e.Form, e.Key, err)
	}
	return a
}

// fetchN fetches until it has n entries or the deadline passes.
func fetchN(t *testing.T, j journal.Journal, n int) []journal.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []journal.Entry
	for len(out) < n {
		got, err := j.Fetch(ctx, n-len(out))
		if err != nil {
			t.Fatalf("fetch: have %d of %d entries: %v", len(out), n, err)
		}
		out = append(out, got...)
	}
	return out
}

// fetchNone checks that nothing is delivered within a short wait.
func fetchNone(t *testing.T, j journal.Journal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got, err := j.Fetch(ctx, 10)
	if len(got) > 0 {
		t.Fatalf("unexpected delivery of %d entries (first %s/%s)", len(got), got[0].Form, got[0].Key)
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch: %v", err)
	}
}

func closeJ(t *testing.T, j journal.Journal) {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func sameEntry(t *testing.T, got, want journal.Entry) {
	t.Helper()
	if got.ID != want.ID || got.Site != want.Site || got.Form != want.Form || got.Key != want.Key ||
		got.Fingerprint != want.Fingerprint || !got.ReceivedAt.Equal(want.ReceivedAt) || got.Spam != want.Spam ||
		fmt.Sprint(got.Claims) != fmt.Sprint(want.Claims) || string(got.Data) != string(want.Data) ||
		string(journal.Checks(got)) != string(journal.Checks(want)) {
		t.Fatalf("entry does not round-trip:\n got %+v\nwant %+v", got, want)
	}
}

func testRoundTrip(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	e := NewEntry("f1", "k1")
	e.Spam = true
	// What the decision checks in the store goes through the journal
	// (DESIGN invariant 12).
	e.SpamReason = "honeypot"
	e.Challenge = &journal.Challenge{Signature: "sig1", Expires: e.ReceivedAt.Add(time.Hour).UTC(), Refuse: true}
	e.Uploads = []journal.Upload{{ID: "u1", Field: "photo"}}
	a := mustAppend(t, j, e)
	if a.Duplicate || a.Entry.Seq == 0 {
		t.Fatalf("append = %+v, want a new entry with a position", a)
	}
	got := fetchN(t, j, 1)[0]
	sameEntry(t, got, e)
	if got.Seq != a.Entry.Seq || got.Handouts != 1 {
		t.Fatalf("delivered seq %d handouts %d, want seq %d handouts 1", got.Seq, got.Handouts, a.Entry.Seq)
	}
}

func testDuplicateKey(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	first := mustAppend(t, j, NewEntry("f1", "k1"))
	again := NewEntry("f1", "k1")
	again.Fingerprint = sha256.Sum256([]byte("other content"))
	dup := mustAppend(t, j, again)
	if !dup.Duplicate || dup.Entry.Seq != first.Entry.Seq || dup.Entry.Fingerprint != first.Entry.Fingerprint {
		t.Fatalf("second append = %+v, want the first entry reported as a duplicate", dup)
	}
	other := mustAppend(t, j, NewEntry("f2", "k1"))
	if other.Duplicate {
		t.Fatal("the same key on another form is not a duplicate")
	}
	if got := fetchN(t, j, 2); got[0].Key != "k1" || got[1].Form != "f2" {
		t.Fatalf("delivered %+v", got)
	}
	fetchNone(t, j)
}

func testConcurrentAppends(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	const writers, each = 50, 20
	var wg sync.WaitGroup
	seqs := make(chan uint64, writers*each*2)
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every key is appended twice at once: one write, one duplicate.
				e := NewEntry("f", fmt.Sprintf("k-%d-%d", w, i))
				var inner sync.WaitGroup
				for range 2 {
					inner.Add(1)
					go func() {
						defer inner.Done()
						a, err := j.Append(context.Background(), e, true)
						if err != nil {
							errs <- err
							return
						}
						if !a.Duplicate {
							seqs <- a.Entry.Seq
						}
					}()
				}
				inner.Wait()
			}
		}()
	}
	wg.Wait()
	close(seqs)
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	seen := map[uint64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("position %d given twice", s)
		}
		seen[s] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d new entries, want %d", len(seen), writers*each)
	}
	got := fetchN(t, j, writers*each)
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("delivery out of journal order: %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	fetchNone(t, j)
}

func testAckAndBacklog(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	for i := range 3 {
		mustAppend(t, j, NewEntry("f", fmt.Sprint(i)))
	}
	waitBacklog(t, j, 3)
	st, err := j.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.OldestPending.IsZero() || st.LastSeq == 0 {
		t.Fatalf("stats %+v: want an oldest pending time and a last position", st)
	}
	got := fetchN(t, j, 3)
	waitBacklog(t, j, 3) // delivered but not acked is still backlog
	if err := j.Ack(ctx, got[0].Seq, got[1].Seq); err != nil {
		t.Fatal(err)
	}
	waitBacklog(t, j, 1)
	if err := j.Ack(ctx, got[2].Seq); err != nil {
		t.Fatal(err)
	}
	waitBacklog(t, j, 0)
	fetchNone(t, j)
}

// waitBacklog polls Stats until the backlog is n: drivers may count
// asynchronously.
func waitBacklog(t *testing.T, j journal.Journal, n int64) {
	t.Helper()
	var st journal.Stats
	poll.UntilNil(t, fmt.Sprintf("a backlog of %d", n), 10*time.Second, func() error {
		var err error
		if st, err = j.Stats(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st.Backlog != n {
			return fmt.Errorf("backlog is %d", st.Backlog)
		}
		return nil
	})
	if n == 0 && !st.OldestPending.IsZero() {
		t.Fatalf("empty backlog with an oldest pending time %v", st.OldestPending)
	}
}

func testNak(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	mustAppend(t, j, NewEntry("f", "a"))
	first := fetchN(t, j, 1)[0]
	if err := j.Nak(ctx, first.Seq, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	again := fetchN(t, j, 1)[0]
	if again.Seq != first.Seq || again.Handouts != 2 {
		t.Fatalf("redelivery seq %d handouts %d, want seq %d handouts 2", again.Seq, again.Handouts, first.Seq)
	}
	if err := j.Ack(ctx, again.Seq); err != nil {
		t.Fatal(err)
	}
	fetchNone(t, j)
}

func testLookup(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	e := NewEntry("f", "k")
	a := mustAppend(t, j, e)
	got, ok, err := j.Lookup(ctx, "f", "k")
	if err != nil || !ok {
		t.Fatalf("lookup = %v, %v", ok, err)
	}
	sameEntry(t, got, e)
	if got.Seq != a.Entry.Seq {
		t.Fatalf("lookup seq %d, want %d", got.Seq, a.Entry.Seq)
	}
	if _, ok, err := j.Lookup(ctx, "f", "missing"); ok || err != nil {
		t.Fatalf("lookup of a missing key = %v, %v", ok, err)
	}
}

func testRead(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	var all []journal.Entry
	for i := range 12 {
		e := NewEntry([]string{"fa", "fb", "fc"}[i%3], fmt.Sprint(i))
		if i%2 == 1 {
			e.Site = "site-b"
		}
		e.ReceivedAt = base.Add(time.Duration(i) * time.Minute)
		all = append(all, mustAppend(t, j, e).Entry)
	}
	count := func(f journal.Filter) []string {
		var keys []string
		if err := j.Read(ctx, f, func(e journal.Entry) error {
			keys = append(keys, e.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	cases := []struct {
		name string
		f    journal.Filter
		want string
	}{
		{"all", journal.Filter{}, "[0 1 2 3 4 5 6 7 8 9 10 11]"},
		{"form", journal.Filter{Form: "fb"}, "[1 4 7 10]"},
		{"site", journal.Filter{Site: "site-b"}, "[1 3 5 7 9 11]"},
		{"window", journal.Filter{Since: base.Add(3 * time.Minute), Until: base.Add(6 * time.Minute)}, "[3 4 5]"},
		{"form and site", journal.Filter{Form: "fa", Site: "site-b"}, "[3 9]"},
		{"after", journal.Filter{AfterSeq: all[9].Seq}, "[10 11]"},
	}
	for _, tc := range cases {
		if got := fmt.Sprint(count(tc.f)); got != tc.want {
			t.Errorf("%s: read %s, want %s", tc.name, got, tc.want)
		}
	}
	stop := errors.New("stop")
	n := 0
	err := j.Read(ctx, journal.Filter{}, func(journal.Entry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("an error from fn must end the read and be returned; got %v after %d", err, n)
	}
}

func testPending(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	ctx := ctxT(t)
	mustAppend(t, j, NewEntry("f", "a"))
	mustAppend(t, j, NewEntry("f", "b"))
	got := fetchN(t, j, 2)
	if err := j.Ack(ctx, got[0].Seq); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(time.Millisecond)
	pending, err := j.Pending(ctx, before.Add(-time.Hour), 10)
	if err != nil || len(pending) != 0 {
		t.Fatalf("nothing was delivered an hour ago; pending = %v, %v", pending, err)
	}
	pending, err = j.Pending(ctx, before.Add(time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Seq != got[1].Seq || pending[0].Handouts < 2 {
		t.Fatalf("pending = %+v, want entry %d as a new delivery", pending, got[1].Seq)
	}
	if err := j.Ack(ctx, pending[0].Seq); err != nil {
		t.Fatal(err)
	}
	waitBacklog(t, j, 0)
}

func testReopen(t *testing.T, open func() journal.Journal) {
	j := open()
	ctx := ctxT(t)
	for _, k := range []string{"a", "b", "c"} {
		mustAppend(t, j, NewEntry("f", k))
	}
	got := fetchN(t, j, 3)
	if err := j.Ack(ctx, got[0].Seq, got[2].Seq); err != nil {
		t.Fatal(err)
	}
	closeJ(t, j)

	// After a reopen the unacknowledged b comes again. Delivery is at least
	// once, so a driver may also repeat c (acknowledged after b); it must not
	// repeat a, acknowledged before anything was left open.
	j = open()
	defer closeJ(t, j)
	var keys []string
	for {
		again := fetchN(t, j, 1)[0]
		keys = append(keys, again.Key)
		if again.Key == "a" {
			t.Fatalf("after reopen delivered %v: a was acknowledged before the close", keys)
		}
		if err := j.Ack(ctx, again.Seq); err != nil {
			t.Fatal(err)
		}
		if again.Key == "b" {
			break
		}
	}
	for {
		ctxShort, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		more, _ := j.Fetch(ctxShort, 10)
		cancel()
		if len(more) == 0 {
			break
		}
		for _, e := range more {
			if e.Key != "c" {
				t.Fatalf("after reopen delivered %s again", e.Key)
			}
			_ = j.Ack(ctx, e.Seq)
		}
	}
	dup := mustAppend(t, j, NewEntry("f", "a"))
	if !dup.Duplicate {
		t.Fatal("dedup must survive a reopen")
	}
	if _, ok, _ := j.Lookup(ctx, "f", "c"); !ok {
		t.Fatal("acknowledged entries stay in the journal for replay")
	}
}

func testClosed(t *testing.T, open func() journal.Journal) {
	j := open()
	closeJ(t, j)
	if _, err := j.Append(context.Background(), NewEntry("f", "a"), true); !errors.Is(err, journal.ErrClosed) {
		t.Fatalf("append after close = %v, want ErrClosed", err)
	}
}

func testFetchWaits(t *testing.T, open func() journal.Journal) {
	j := open()
	defer closeJ(t, j)
	done := make(chan []journal.Entry, 1)
	go func() {
		got, err := j.Fetch(ctxT(t), 10)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	mustAppend(t, j, NewEntry("f", "late"))
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Key != "late" {
			t.Fatalf("fetch woke with %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting fetch was not woken by an append")
	}
}

// testFormCounter: a journal that counts a form's entries counts each
// once, pending until acknowledged (in flight too), and no other form's.
func testFormCounter(t *testing.T, open func() journal.Journal) {
	j := open()
	defer j.Close()
	fc := capability[journal.FormCounter](t, j)
	ctx := ctxT(t)
	for _, e := range []journal.Entry{NewEntry("f", "a"), NewEntry("f", "b"), NewEntry("g", "c"), NewEntry("f", "c")} {
		mustAppend(t, j, e)
	}
	count := func() journal.FormCount {
		t.Helper()
		c, err := fc.CountForm(ctx, "f")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := count(); c != (journal.FormCount{Entries: 3, Pending: 3}) {
		t.Fatalf("appended: %+v, want 3 entries, 3 pending", c)
	}
	got := fetchN(t, j, 4)
	if c := count(); c != (journal.FormCount{Entries: 3, Pending: 3}) {
		t.Fatalf("in flight: %+v, want 3 entries, 3 pending", c)
	}
	for _, e := range got {
		if err := j.Ack(ctx, e.Seq); err != nil {
			t.Fatal(err)
		}
	}
	// Acks reach a remote server asynchronously.
	poll.UntilNil(t, "the acknowledged entries no longer pending", 10*time.Second, func() error {
		if c := count(); c != (journal.FormCount{Entries: 3}) {
			return fmt.Errorf("%+v, want 3 entries, none pending", c)
		}
		return nil
	})
	if c, err := fc.CountForm(ctx, "none"); err != nil || c != (journal.FormCount{}) {
		t.Fatalf("a form without entries: %+v %v", c, err)
	}
}
