// Package storetest is the conformance suite every store driver passes: the
// decision rules of package store, checked against the real database.
package storetest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// Opener returns a function that opens the store on one fresh database;
// each call opens that same database again. now is the store's clock (its
// Options.Now); nil for the time of day.
type Opener func(t *testing.T, now func() time.Time) func() store.Store

// storeCase is one case of the suite: a rule checked on a fresh store,
// which Run opens, closes and runs in parallel with the others. Each file
// of the suite lists its own cases (outboxCases, placeCases, ...).
type storeCase struct {
	name string
	fn   func(*testing.T, store.Store)
}

// Run runs the suite.
func Run(t *testing.T, newStore Opener) {
	t.Helper()
	tests := []storeCase{
		{"StoreAndLookUp", testStore},
		{"ReplaySameKey", testReplay},
		{"ReplayInsideOneBatch", testReplayInBatch},
		{"DuplicateParticipant", testDuplicate},
		{"ResendOfALiveEntry", testResend},
		{"TokenListedTwice", testTokenTwice},
		{"UniqueAnswerOnAFullForm", testUniqueAnswer},
		{"EventsWithEveryChange", testEvents},
		{"SpamAndNotSpam", testSpamReclassify},
		{"EntryPages", testEntryPages},
		{"Settings", testSettings},
		{"CapacityReject", testReject},
		{"CapacityWaitlistInArrivalOrder", testWaitlist},
		{"WaitlistSharedSeqsByID", testWaitlistSharedSeqs},
		{"Spam", testSpam},
		{"ConcurrentNoOversell", testConcurrent},
		{"DeadLetters", testDeadLetters},
		{"DeadLetterReplays", testDeadLetterReplays},
		{"FormsAndVersions", testForms},
		{"FormHistory", testFormHistory},
		{"CapacityGrowthPromotes", testGrowth},
		{"CancelErrors", testCancelErrors},
		{"ExportPages", testExport},
		{"EntryPagesSharedSeqs", testEntryPagesSharedSeqs},
		{"Tokens", testTokens},
		{"EraseOldData", testErase},
		{"FindAndEraseAPerson", testFindErase},
		{"SameTimeByID", testSameTimeByID},
		{"LimitsBelowOneTakeNothing", testLimitsBelowOne},
		{"ConsoleReads", testConsole},
		{"Budgets", testBudgets},
	}
	tests = append(tests, outboxCases...)
	tests = append(tests, placeCases...)
	tests = append(tests, reviewCases...)
	tests = append(tests, draftCases...)
	tests = append(tests, changeCases...)
	tests = append(tests, checkinCases...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			open := newStore(t, nil)
			s := open()
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s)
		})
	}
	// Cases about the times a store records run on a clock that moves
	// only when told.
	clocked := []struct {
		name string
		fn   func(*testing.T, store.Store, *Clock)
	}{
		{"EventTimesFromTheStoreClock", testEventTimes},
		{"DeadLettersSameTimeByID", testDeadLettersSameTime},
		{"DecisionsPruneSpentSolutions", testDecisionsPruneSpent},
	}
	for _, tc := range clocked {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
			s := newStore(t, clock.Now)()
			t.Cleanup(func() { s.Close() })
			tc.fn(t, s, clock)
		})
	}
	t.Run("Reopen", func(t *testing.T) {
		t.Parallel()
		open := newStore(t, nil)
		s := open()
		putForm(t, s, "f", intp(1), store.StatusWaitlisted)
		mustApply(t, s, sub("f", "a", 1, "p1"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open()
		defer s.Close()
		o := mustApply(t, s, sub("f", "a", 1, "p1"))[0]
		if !o.Replayed || o.Status != store.StatusStored {
			t.Fatalf("after reopen: %+v, want the stored outcome replayed", o)
		}
		if o := mustApply(t, s, sub("f", "b", 2, "p2"))[0]; o.Status != store.StatusWaitlisted {
			t.Fatalf("after reopen capacity is lost: %+v", o)
		}
	})
}

func intp(n int) *int { return &n }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var idSeq atomic.Int64

// sub makes a submission for form/key at journal position seq, claiming
// the given participant tokens.
func sub(form, key string, seq uint64, claims ...string) journal.Entry {
	return journal.Entry{
		Seq:         seq,
		ID:          fmt.Sprintf("%s-%s-%d", form, key, idSeq.Add(1)),
		Site:        "site",
		Form:        form,
		Key:         key,
		Fingerprint: sha256.Sum256([]byte(form + key)),
		ReceivedAt:  time.Now().UTC().Truncate(time.Microsecond),
		Claims:      claims,
		Data:        []byte(`{"k":"` + key + `"}`),
	}
}

func putForm(t *testing.T, s store.Store, id string, capacity *int, whenFull string) {
	t.Helper()
	wf := "reject"
	if whenFull == store.StatusWaitlisted {
		wf = "waitlist"
	}
	if err := s.PutForms(ctxT(t), []form.Record{{ID: id, Site: "site", Source: []byte("id: " + id), Capacity: capacity, WhenFull: wf}}); err != nil {
		t.Fatalf("put form: %v", err)
	}
}

func mustApply(t *testing.T, s store.Store, subs ...journal.Entry) []store.Outcome {
	t.Helper()
	out, err := s.Apply(ctxT(t), subs)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(out) != len(subs) {
		t.Fatalf("apply returned %d outcomes for %d submissions", len(out), len(subs))
	}
	return out
}

// ApplyUntilDecided applies batch as the processor does, again while the
// store answers store.ErrUnavailable (a serialization failure among
// writers deciding at once), and returns the first other error.
func ApplyUntilDecided(ctx context.Context, s store.Store, batch []journal.Entry) error {
	for {
		_, err := s.Apply(ctx, batch)
		if err == nil || !errors.Is(err, store.ErrUnavailable) {
			return err
		}
	}
}

// mustCancel cancels an entry of form and returns the entries its freed
// place let in.
func mustCancel(t *testing.T, s store.Store, form, id string) []string {
	t.Helper()
	promoted, err := s.Cancel(ctxT(t), form, id)
	if err != nil {
		t.Fatalf("cancel %s/%s: %v", form, id, err)
	}
	return promoted
}

func statuses(out []store.Outcome) []string {
	s := make([]string, len(out))
	for i, o := range out {
		s[i] = o.Status
	}
	return s
}

func mustOutcome(t *testing.T, s store.Store, form, key string) store.Outcome {
	t.Helper()
	o, ok, err := s.Outcome(ctxT(t), form, key)
	if err != nil || !ok {
		t.Fatalf("outcome %s/%s: %v (found %v)", form, key, err, ok)
	}
	return o
}

// sharedSeqs makes n entries of form f whose journal positions come three
// to a seq, as entries from two journals do (see store.Cursor), in an
// order where neither the order of deciding nor the ids alone give the
// arrival order: they are decided last first, and within a seq the ids
// sort as neither. It decides them and returns them in (seq, id) order.
func sharedSeqs(t *testing.T, s store.Store, f string, n int) []journal.Entry {
	t.Helper()
	putForm(t, s, f, nil, "")
	batch := make([]journal.Entry, 0, n)
	for i := range n {
		j := n - 1 - i
		e := sub(f, fmt.Sprint("k", j), uint64(j/3+1))
		e.ID = fmt.Sprintf("%s-%c-%05d", f, "bac"[j%3], j)
		batch = append(batch, e)
	}
	mustApply(t, s, batch...)
	slices.SortFunc(batch, func(a, b journal.Entry) int {
		if a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return batch
}

func ids(es []journal.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// history is the types of an entry's events, "type:status" each.
func history(t *testing.T, s store.Store, id string) []string {
	t.Helper()
	evs, err := s.History(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = strings.TrimPrefix(e.Type, "submission.") + ":" + e.Status
		if e.ID() == "" || e.Form == "" || e.Site != "site" || e.At.IsZero() {
			t.Fatalf("event %+v lacks its id, form, site or time", e)
		}
	}
	return out
}
