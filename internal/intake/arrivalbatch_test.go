package intake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store"
)

// arrivalWrite is one RecordArrivals the store was asked for.
type arrivalWrite struct {
	form string
	b    store.ArrivalBatch
	now  time.Time
}

// fakeArrivals records the writes, and fails them while err is set.
type fakeArrivals struct {
	mu     sync.Mutex
	writes []arrivalWrite
	err    error
}

func (f *fakeArrivals) RecordArrivals(_ context.Context, form string, b store.ArrivalBatch, now time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, arrivalWrite{form: form, b: b, now: now})
	return 0, f.err
}

func (f *fakeArrivals) got() []arrivalWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]arrivalWrite(nil), f.writes...)
}

func reports(prefix string, n int) []store.Arrival {
	out := make([]store.Arrival, n)
	for i := range out {
		out[i] = store.Arrival{Key: fmt.Sprintf("%s-%d", prefix, i), StartedAt: time.Unix(1764500000, 0)}
	}
	return out
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestArrivalBatcherWritesTogether: many requests' reports become one
// write per form and KnownOnly, in the order the groups came, with the
// refusals summed and the latest request's time; nothing is written
// before the flush.
func TestArrivalBatcherWritesTogether(t *testing.T) {
	t.Parallel()
	st := &fakeArrivals{}
	a := NewArrivalBatcher(st, quiet)
	ctx := context.Background()
	t0 := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range 30 {
		form := []string{"fair", "choir"}[i%2]
		b := store.ArrivalBatch{Reports: reports(fmt.Sprintf("%s-%d", form, i), 2), KnownOnly: i%3 == 0, Refused: 1}
		if n, err := a.RecordArrivals(ctx, form, b, t0.Add(time.Duration(i)*time.Millisecond)); n != 0 || err != nil {
			t.Fatalf("RecordArrivals = %d, %v", n, err)
		}
	}
	if got := st.got(); len(got) != 0 {
		t.Fatalf("%d writes before the flush, want none", len(got))
	}
	if n := a.Flush(ctx); n != 60 {
		t.Errorf("Flush wrote %d reports, want 60", n)
	}
	got := st.got()
	type want struct {
		form      string
		knownOnly bool
		reports   int
		last      int // the last request's index
	}
	// Requests 0..29: form by i%2, KnownOnly by i%3 == 0; groups in the
	// order they first came: (fair, known) 0, (choir, all) 1, (fair, all) 2, (choir, known) 3.
	wants := []want{{"fair", true, 2 * 5, 24}, {"choir", false, 2 * 10, 29}, {"fair", false, 2 * 10, 28}, {"choir", true, 2 * 5, 27}}
	if len(got) != len(wants) {
		t.Fatalf("%d writes, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.form != w.form || g.b.KnownOnly != w.knownOnly || len(g.b.Reports) != w.reports || g.b.Refused != w.reports/2 || !g.now.Equal(t0.Add(time.Duration(w.last)*time.Millisecond)) {
			t.Errorf("write %d: %s known-only %v, %d reports, %d refused, at %v; want %+v", i, g.form, g.b.KnownOnly, len(g.b.Reports), g.b.Refused, g.now, w)
		}
	}
	if a.Flush(ctx); len(st.got()) != len(wants) {
		t.Errorf("a second flush wrote again")
	}
}

// TestArrivalBatcherChunksAndBounds: a group is written at most
// arrivalFlushAt reports a transaction; beyond arrivalHeldMax held a
// request writes its own reports at once; a failed write is dropped, not
// tried again.
func TestArrivalBatcherChunksAndBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	t.Run("chunks", func(t *testing.T) {
		t.Parallel()
		st := &fakeArrivals{}
		a := NewArrivalBatcher(st, quiet)
		for i := range 25 {
			_, _ = a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports(fmt.Sprint(i), 100), Refused: 2}, now)
		}
		a.Flush(ctx)
		got := st.got()
		if len(got) != 3 || len(got[0].b.Reports) != arrivalFlushAt || len(got[1].b.Reports) != arrivalFlushAt || len(got[2].b.Reports) != 500 {
			t.Fatalf("writes %d, want 3 of 1000, 1000, 500 reports", len(got))
		}
		if got[0].b.Refused != 50 || got[1].b.Refused != 0 || got[2].b.Refused != 0 {
			t.Errorf("refused %d, %d, %d; want all 50 with the first", got[0].b.Refused, got[1].b.Refused, got[2].b.Refused)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		st := &fakeArrivals{}
		a := NewArrivalBatcher(st, quiet)
		for i := range arrivalHeldMax / 100 {
			_, _ = a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports(fmt.Sprint(i), 100)}, now)
		}
		if n := len(st.got()); n != 0 {
			t.Fatalf("%d writes while under the bound", n)
		}
		st.err = errors.New("store down")
		if _, err := a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports("over", 1)}, now); err == nil {
			t.Errorf("a request over the bound got no error from its own failed write")
		}
		if got := st.got(); len(got) != 1 || len(got[0].b.Reports) != 1 || got[0].b.Reports[0].Key != "over-0" {
			t.Fatalf("over the bound: writes %+v, want the request's own", got)
		}
	})
	t.Run("a failed write is dropped", func(t *testing.T) {
		t.Parallel()
		st := &fakeArrivals{err: errors.New("store down")}
		a := NewArrivalBatcher(st, quiet)
		_, _ = a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports("x", 3)}, now)
		if n := a.Flush(ctx); n != 0 || len(st.got()) != 1 {
			t.Fatalf("Flush wrote %d in %d tries, want 0 in 1", n, len(st.got()))
		}
		st.mu.Lock()
		st.err = nil
		st.mu.Unlock()
		if a.Flush(ctx); len(st.got()) != 1 {
			t.Errorf("the dropped reports were tried again")
		}
	})
}

// TestArrivalBatcherRun: Run writes what is held on its timer, and what
// is left when ctx ends (a shutdown); after that requests write their own.
func TestArrivalBatcherRun(t *testing.T) {
	t.Parallel()
	st := &fakeArrivals{}
	a := NewArrivalBatcher(st, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	_, _ = a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports("tick", 1)}, now)
	poll.Until(t, "the timer's write", 10*time.Second, func() bool { return len(st.got()) == 1 })

	_, _ = a.RecordArrivals(ctx, "fair", store.ArrivalBatch{Reports: reports("last", 2)}, now)
	cancel()
	<-done
	got := st.got()
	if len(got) != 2 || len(got[1].b.Reports) != 2 {
		t.Fatalf("writes after the shutdown: %+v, want the held two written", got)
	}
	_, _ = a.RecordArrivals(context.Background(), "fair", store.ArrivalBatch{Reports: reports("after", 1)}, now)
	if got := st.got(); len(got) != 3 || got[2].b.Reports[0].Key != "after-0" {
		t.Errorf("a report after the shutdown was not written at once: %+v", got)
	}
}
