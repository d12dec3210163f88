package processor_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type rig struct {
	j      *sqlitejournal.Journal
	s      *sqlitestore.Store
	notify *processor.Notifier
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(dir, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close(); s.Close() })
	return &rig{j: j, s: s, notify: processor.NewNotifier()}
}

func (r *rig) append(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := r.j.Append(context.Background(), journaltest.NewEntry("f", k), true); err != nil {
			t.Fatal(err)
		}
	}
}

// run starts the processor until the test ends.
func run(t *testing.T, p *processor.Processor) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func statusOf(t *testing.T, s store.Store, key string) string {
	o, ok, err := s.Outcome(context.Background(), "f", key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return o.Status
}

// faultyStore refuses any batch that holds a poisoned key, as a driver
// would refuse a row it cannot store, and can play an outage.
type faultyStore struct {
	store.Store
	poison  string
	outages atomic.Int32 // Apply calls still to fail with ErrUnavailable
	calls   atomic.Int32
}

func (f *faultyStore) Apply(ctx context.Context, subs []journal.Entry) ([]store.Outcome, error) {
	f.calls.Add(1)
	if f.outages.Load() > 0 {
		f.outages.Add(-1)
		return nil, fmt.Errorf("connection refused: %w", store.ErrUnavailable)
	}
	for _, s := range subs {
		if s.Key == f.poison {
			return nil, errors.New("value too long for column")
		}
	}
	return f.Store.Apply(ctx, subs)
}

// A poison entry is isolated from its batch, retried, then dead-lettered
// with its reason; its neighbours are stored meanwhile, and its waiter
// learns the outcome.
func TestPoisonEntryIsDeadLettered(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fs := &faultyStore{Store: r.s, poison: "bad"}
	wait, stop := r.notify.Wait("f", "bad")
	defer stop()
	r.append(t, "a", "b", "bad", "c", "d")
	p := processor.New(r.j, fs, r.notify, processor.Options{MaxAttempts: 3, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, BatchSize: 10})
	run(t, p)
	for _, k := range []string{"a", "b", "c", "d"} {
		poll.Until(t, k+" stored", 15*time.Second, func() bool { return statusOf(t, r.s, k) == store.StatusStored })
	}
	select {
	case o := <-wait:
		if o.Decision != store.StatusDeadLettered {
			t.Fatalf("waiter got %+v", o)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter of the poison entry was never told")
	}
	dls, err := r.s.DeadLetters(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].Key != "bad" || dls[0].Attempts != 3 || dls[0].Reason == "" {
		t.Fatalf("dead letters %+v", dls)
	}
	poll.Until(t, "an empty backlog", 15*time.Second, func() bool {
		st, _ := r.j.Stats(context.Background())
		return st.Backlog == 0
	})
}

// A store outage is retried without counting attempts: even with one
// attempt allowed, nothing is dead-lettered, and everything lands after.
func TestStoreOutageIsRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fs := &faultyStore{Store: r.s}
	fs.outages.Store(5)
	r.append(t, "a", "b", "c")
	p := processor.New(r.j, fs, r.notify, processor.Options{MaxAttempts: 1, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	run(t, p)
	for _, k := range []string{"a", "b", "c"} {
		poll.Until(t, k+" stored", 15*time.Second, func() bool { return statusOf(t, r.s, k) == store.StatusStored })
	}
	if dls, _ := r.s.DeadLetters(context.Background(), 10); len(dls) != 0 {
		t.Fatalf("an outage dead-lettered %+v", dls)
	}
	if fs.calls.Load() < 6 {
		t.Fatalf("only %d Apply calls for 5 outages", fs.calls.Load())
	}
}

// The reconciler re-drives entries that were delivered and never
// acknowledged, as when a worker dies mid-batch.
func TestReconcilerRedrivesStaleEntries(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.append(t, "a", "b")
	// A worker takes the entries and dies with them.
	ctx := context.Background()
	taken, err := r.j.Fetch(ctx, 10)
	if err != nil || len(taken) != 2 {
		t.Fatalf("fetch %v %v", taken, err)
	}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	p := processor.New(r.j, r.s, r.notify, processor.Options{StaleAfter: time.Minute, Now: clock})
	if n, err := p.Reconcile(ctx); err != nil || n != 0 {
		t.Fatalf("fresh entries re-driven: %d %v", n, err)
	}
	now.Add(int64(2 * time.Minute))
	n, err := p.Reconcile(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reconcile = %d, %v; want 2 stale entries", n, err)
	}
	for _, k := range []string{"a", "b"} {
		if s := statusOf(t, r.s, k); s != store.StatusStored {
			t.Fatalf("%s is %q after reconcile", k, s)
		}
	}
	st, _ := r.j.Stats(ctx)
	if st.Backlog != 0 {
		t.Fatalf("backlog %d after reconcile", st.Backlog)
	}
}

// A waiter registered before the append gets the outcome; a waiter that
// stopped waiting gets nothing and leaks nothing.
func TestNotifier(t *testing.T) {
	t.Parallel()
	n := processor.NewNotifier()
	a, stopA := n.Wait("f", "k")
	b, stopB := n.Wait("f", "k")
	stopB()
	n.Publish(store.Outcome{Form: "f", Key: "k", Decision: store.StatusStored})
	select {
	case o := <-a:
		if o.Key != "k" {
			t.Fatalf("got %+v", o)
		}
	default:
		t.Fatal("the waiter was not told")
	}
	select {
	case o := <-b:
		t.Fatalf("a stopped waiter was told %+v", o)
	default:
	}
	stopA()
	n.Publish(store.Outcome{Form: "f", Key: "k"}) // nobody waits: nothing happens
}
