package processor_test

import (
	"context"
	"database/sql"
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
	"github.com/formd/formd/internal/sqlitedb"
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

// appendSync appends an entry of form f for each key to the journal, as
// sync submissions.
func appendSync(t *testing.T, j *sqlitejournal.Journal, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := j.Append(context.Background(), journaltest.NewEntry("f", k), true); err != nil {
			t.Fatal(err)
		}
	}
}

// toldDeadLettered waits for the poison entry's waiter to be told that
// the entry was dead-lettered.
func toldDeadLettered(t *testing.T, wait <-chan store.Outcome) {
	t.Helper()
	select {
	case o := <-wait:
		if o.Decision != store.StatusDeadLettered {
			t.Fatalf("waiter got %+v", o)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter of the poison entry was never told")
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
	appendSync(t, r.j, "a", "b", "bad", "c", "d")
	p := processor.New(r.j, fs, r.notify, processor.Options{MaxAttempts: 3, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, BatchSize: 10})
	run(t, p)
	for _, k := range []string{"a", "b", "c", "d"} {
		poll.Until(t, k+" stored", 15*time.Second, func() bool { return statusOf(t, r.s, k) == store.StatusStored })
	}
	toldDeadLettered(t, wait)
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

// An entry the store refuses for good (it reuses the id of an entry
// already decided, which the store's unique id forbids) is dead-lettered
// like any poison entry, and recording that dead letter answers with the
// outcome the id already has rather than an error: the processor acks it
// and goes on with the entries after it, instead of retrying the batch
// forever.
func TestReusedIDIsSettled(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	appendSync(t, r.j, "first")
	reused := journaltest.NewEntry("f", "reused")
	reused.ID = journaltest.NewEntry("f", "first").ID
	if _, err := r.j.Append(ctx, reused, true); err != nil {
		t.Fatal(err)
	}
	appendSync(t, r.j, "after")
	p := processor.New(r.j, r.s, r.notify, processor.Options{MaxAttempts: 2, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, BatchSize: 10})
	run(t, p)
	poll.Until(t, "an empty backlog", 15*time.Second, func() bool {
		st, _ := r.j.Stats(ctx)
		return st.Backlog == 0
	})
	for _, k := range []string{"first", "after"} {
		if s := statusOf(t, r.s, k); s != store.StatusStored {
			t.Fatalf("%s is %q, want stored", k, s)
		}
	}
	if s := statusOf(t, r.s, "reused"); s != "" {
		t.Fatalf("the entry reusing an id has an outcome of its own: %q", s)
	}
	if dls, _ := r.s.DeadLetters(ctx, 10); len(dls) != 0 {
		t.Fatalf("dead letters %+v: the reused id's entry cannot have a record", dls)
	}
}

// A store outage is retried without counting attempts: even with one
// attempt allowed, nothing is dead-lettered, and everything lands after.
func TestStoreOutageIsRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	fs := &faultyStore{Store: r.s}
	fs.outages.Store(5)
	appendSync(t, r.j, "a", "b", "c")
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
	appendSync(t, r.j, "a", "b")
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

// sharedRig is the embedded fast path: the journal and the store on one
// shared writer, sync entries decided at append by the processor's rules
// through apply (the store's ApplyIn, unless a test wraps it).
type sharedRig struct {
	dir    string
	close  func()
	j      *sqlitejournal.Journal
	s      *sqlitestore.Store
	notify *processor.Notifier
	p      *processor.Processor
}

func newSharedRig(t *testing.T, dir string, decider processor.Decider, opts processor.Options,
	apply func(ctx context.Context, s *sqlitestore.Store, tx *sql.Tx, es []journal.Entry) ([]store.Outcome, error)) *sharedRig {
	t.Helper()
	ctx := context.Background()
	jpath, spath := filepath.Join(dir, "journal.db"), filepath.Join(dir, "store.db")
	w, err := sqlitedb.OpenShared(jpath, spath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: spath, Writer: w})
	if err != nil {
		t.Fatal(err)
	}
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: jpath, Writer: w})
	if err != nil {
		t.Fatal(err)
	}
	r := &sharedRig{dir: dir, j: j, s: s, notify: processor.NewNotifier()}
	if decider == nil {
		decider = s
	}
	if apply == nil {
		apply = func(ctx context.Context, s *sqlitestore.Store, tx *sql.Tx, es []journal.Entry) ([]store.Outcome, error) {
			return s.ApplyIn(ctx, tx, es)
		}
	}
	r.p = processor.New(j, decider, r.notify, opts)
	if err := j.DecideAtAppend(func(ctx context.Context, tx *sql.Tx, es []journal.Entry) ([]bool, func()) {
		return r.p.DecideInline(ctx, es, func(ctx context.Context, es []journal.Entry) ([]store.Outcome, error) { return apply(ctx, s, tx, es) })
	}); err != nil {
		t.Fatal(err)
	}
	closed := false
	r.close = func() {
		if !closed {
			closed = true
			j.Close()
			s.Close()
		}
	}
	t.Cleanup(r.close)
	return r
}

// nothingToFetch checks that the processor's stream holds no entry.
func nothingToFetch(t *testing.T, j *sqlitejournal.Journal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if got, err := j.Fetch(ctx, 10); len(got) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the processor was handed %d entries (%v): they were decided at append", len(got), err)
	}
}

// On the fast path a sync append returns decided: the waiter has its
// outcome when Append returns, the store has the entry and its event, and
// the processor is handed nothing, now or after a restart.
func TestDecidedAtAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newSharedRig(t, dir, nil, processor.Options{}, nil)
	wait, stop := r.notify.Wait("f", "a")
	defer stop()
	appendSync(t, r.j, "a", "b")
	select {
	case o := <-wait:
		if o.Decision != store.StatusStored || o.Replayed {
			t.Fatalf("outcome %+v", o)
		}
	default:
		t.Fatal("Append returned before the outcome was published")
	}
	for _, k := range []string{"a", "b"} {
		if s := statusOf(t, r.s, k); s != store.StatusStored {
			t.Fatalf("%s is %q", k, s)
		}
	}
	nothingToFetch(t, r.j)
	if st, _ := r.j.Stats(context.Background()); st.Backlog != 0 || st.LastSeq != 2 {
		t.Fatalf("journal stats %+v", st)
	}
	// An async entry still goes through the processor.
	if _, err := r.j.Append(context.Background(), journaltest.NewEntry("f", "async"), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := r.j.Fetch(ctx, 10); err != nil || len(got) != 1 || got[0].Key != "async" {
		t.Fatalf("fetch after an async append: %+v %v", got, err)
	}
	// The journal is its own file, as without the fast path; a restart
	// hands the processor nothing decided at append.
	r.close()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: filepath.Join(dir, "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if e, ok, err := j.Lookup(context.Background(), "f", "a"); err != nil || !ok || e.Seq != 1 {
		t.Fatalf("the journal file alone: %+v %v %v", e, ok, err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if got, err := j.Fetch(ctx2, 10); err != nil || len(got) != 1 || got[0].Key != "async" {
		t.Fatalf("after a restart the processor gets %+v %v; want only the unacknowledged async entry", got, err)
	}
}

// A poison entry fails at append on its own: its neighbours are decided
// there, and it is journaled and left to the processor, which retries it
// and dead-letters it; its waiter learns that.
func TestPoisonEntryAtAppendIsLeftToTheProcessor(t *testing.T) {
	t.Parallel()
	var fs *faultyStore
	r := newSharedRig(t, t.TempDir(), nil, processor.Options{MaxAttempts: 2, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, BatchSize: 10},
		func(ctx context.Context, s *sqlitestore.Store, tx *sql.Tx, es []journal.Entry) ([]store.Outcome, error) {
			for _, e := range es {
				if e.Key == "bad" {
					return nil, errors.New("value too long for column")
				}
			}
			return s.ApplyIn(ctx, tx, es)
		})
	fs = &faultyStore{Store: r.s, poison: "bad"}
	r.p = processor.New(r.j, fs, r.notify, processor.Options{MaxAttempts: 2, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, BatchSize: 10})
	wait, stop := r.notify.Wait("f", "bad")
	defer stop()
	// Concurrent appends share a commit, so the poison entry meets its
	// neighbours in one decision.
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b", "bad", "c", "d"} {
		wg.Go(func() {
			if _, err := r.j.Append(context.Background(), journaltest.NewEntry("f", k), true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, k := range []string{"a", "b", "c", "d"} {
		if s := statusOf(t, r.s, k); s != store.StatusStored {
			t.Fatalf("%s is %q after its append", k, s)
		}
	}
	if s := statusOf(t, r.s, "bad"); s != "" {
		t.Fatalf("the poison entry is %q in the store", s)
	}
	run(t, r.p)
	toldDeadLettered(t, wait)
	if dls, _ := r.s.DeadLetters(context.Background(), 10); len(dls) != 1 || dls[0].Key != "bad" {
		t.Fatalf("dead letters %+v", dls)
	}
}

// A store that fails at append leaves the whole batch journaled and
// undecided; the processor decides it once the store is back.
func TestStoreOutageAtAppendIsLeftToTheProcessor(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	r := newSharedRig(t, t.TempDir(), nil, processor.Options{RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond},
		func(ctx context.Context, s *sqlitestore.Store, tx *sql.Tx, es []journal.Entry) ([]store.Outcome, error) {
			if down.Load() {
				return nil, fmt.Errorf("disk I/O error: %w", store.ErrUnavailable)
			}
			return s.ApplyIn(ctx, tx, es)
		})
	appendSync(t, r.j, "a", "b")
	if s := statusOf(t, r.s, "a"); s != "" {
		t.Fatalf("decided %q while the store was down", s)
	}
	run(t, r.p)
	for _, k := range []string{"a", "b"} {
		poll.Until(t, k+" stored", 15*time.Second, func() bool { return statusOf(t, r.s, k) == store.StatusStored })
	}
}
