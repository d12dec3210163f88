package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// testUploadBudgets: what the unclaimed uploads of one source and of one
// form hold is bounded when an upload is made — in flight and in bytes —
// and what a claim, a completion or an expiry gives back is counted
// again; concurrent creations never take a budget over its limit (the
// flood from one address of issue 30).
func testUploadBudgets(t *testing.T, s UploadStore) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	var seq atomic.Int64 // mk is called from concurrent creations too
	mk := func(form, source string, size int64, at time.Time) store.Upload {
		return store.Upload{ID: fmt.Sprintf("b%d-%d", idSeq.Add(1), seq.Add(1)), Form: form, Field: "photo", Size: size, Source: source,
			CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	}
	refusedBy := func(t *testing.T, err error, budget string) {
		t.Helper()
		be, ok := store.IsUploadBudget(err)
		if !ok || be.Budget != budget || !errors.Is(err, store.ErrUploadBudget) {
			t.Fatalf("upload refused with %v, want budget %s", err, budget)
		}
	}
	create := func(t *testing.T, u store.Upload, l store.UploadLimits) error {
		t.Helper()
		return s.CreateUploadWithin(ctxT(t), u, l, now)
	}

	t.Run("InFlightPerSource", func(t *testing.T) {
		l := store.UploadLimits{SourceInFlight: 2}
		a := mk("bf1", "198.51.100.7", 10, now)
		for _, u := range []store.Upload{a, mk("bf1", "198.51.100.7", 10, now)} {
			if err := create(t, u, l); err != nil {
				t.Fatalf("upload within the budget: %v", err)
			}
		}
		refusedBy(t, create(t, mk("bf2", "198.51.100.7", 10, now), l), store.BudgetSourceInFlight)
		if _, err := s.Upload(ctxT(t), a.ID); err != nil {
			t.Fatalf("an upload within the budget is not recorded: %v", err)
		}
		// Another address is not counted with this one.
		if err := create(t, mk("bf1", "198.51.100.8", 10, now), l); err != nil {
			t.Fatalf("another address: %v", err)
		}
		// A complete upload is no longer in flight.
		if err := s.CompleteUpload(ctxT(t), a.ID, sha256.Sum256(nil), "image/png"); err != nil {
			t.Fatal(err)
		}
		if err := create(t, mk("bf2", "198.51.100.7", 10, now), l); err != nil {
			t.Fatalf("after one of them completed: %v", err)
		}
	})

	t.Run("BytesPerSourceUntilClaimedOrExpired", func(t *testing.T) {
		l := store.UploadLimits{SourceBytes: 100}
		a := mk("bb1", "2001:db8:1:2::/64", 60, now)
		if err := create(t, a, l); err != nil {
			t.Fatal(err)
		}
		refusedBy(t, create(t, mk("bb2", "2001:db8:1:2::/64", 41, now), l), store.BudgetSourceBytes)
		if err := create(t, mk("bb2", "2001:db8:1:2::/64", 40, now), l); err != nil {
			t.Fatalf("the last 40 bytes of the budget: %v", err)
		}
		refusedBy(t, create(t, mk("bb2", "2001:db8:1:2::/64", 1, now), l), store.BudgetSourceBytes)
		// A claimed upload is an entry's, no longer the address's.
		if err := s.CompleteUpload(ctxT(t), a.ID, sha256.Sum256(nil), "image/png"); err != nil {
			t.Fatal(err)
		}
		if o := mustApply(t, s, withUploads("bb1", "claim-"+a.ID, 1, a.ID))[0]; o.Status != store.StatusStored {
			t.Fatalf("claim: %+v", o)
		}
		if err := create(t, mk("bb2", "2001:db8:1:2::/64", 60, now), l); err != nil {
			t.Fatalf("after the claim: %v", err)
		}
		// Expired uploads are not counted, deleted or not.
		old := mk("bb3", "203.0.113.9", 100, now.Add(-2*time.Hour))
		if err := s.CreateUpload(ctxT(t), old); err != nil {
			t.Fatal(err)
		}
		if err := create(t, mk("bb3", "203.0.113.9", 100, now), l); err != nil {
			t.Fatalf("an expired upload still counted: %v", err)
		}
	})

	t.Run("PerFormQuota", func(t *testing.T) {
		l := store.UploadLimits{FormBytes: 50, FormInFlight: 3}
		for i := range 2 {
			if err := create(t, mk("bq", fmt.Sprintf("192.0.2.%d", i+1), 25, now), l); err != nil {
				t.Fatal(err)
			}
		}
		refusedBy(t, create(t, mk("bq", "192.0.2.9", 1, now), l), store.BudgetFormBytes)
		l.FormBytes = 0
		if err := create(t, mk("bq", "192.0.2.9", 1, now), l); err != nil {
			t.Fatal(err)
		}
		refusedBy(t, create(t, mk("bq", "192.0.2.10", 1, now), l), store.BudgetFormInFlight)
		// No source (a post's files): only the form's budgets.
		refusedBy(t, create(t, mk("bq", "", 1, now), l), store.BudgetFormInFlight)
	})

	t.Run("ConcurrentCreationsStayWithin", func(t *testing.T) {
		const n, limit = 12, 3
		l := store.UploadLimits{SourceInFlight: limit, FormBytes: 1 << 20}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = create(t, mk("bc", "198.51.100.77", 1, now), l) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch _, budget := store.IsUploadBudget(err); {
			case err == nil:
				ok++
			case !budget:
				t.Fatalf("concurrent creation: %v", err)
			}
		}
		if ok != limit {
			t.Fatalf("%d of %d concurrent uploads recorded, want the limit %d", ok, n, limit)
		}
	})
}
