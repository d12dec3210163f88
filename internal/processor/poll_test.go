package processor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// decidedElsewhere is the store as the poll sees it: outcomes another
// instance decided, whose announcements never came.
type decidedElsewhere struct {
	mu      sync.Mutex
	decided map[store.Key]store.Outcome
	calls   [][]store.Key
}

func (d *decidedElsewhere) read(_ context.Context, keys []store.Key) ([]store.Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, slices.Clone(keys))
	var out []store.Outcome
	for _, k := range keys {
		if o, ok := d.decided[k]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

func (d *decidedElsewhere) decide(form, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.decided[store.Key{Form: form, Key: key}] = store.Outcome{Form: form, Key: key, ID: "id-" + key, Decision: store.StatusStored}
}

func (d *decidedElsewhere) queries() [][]store.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// periods hands the poll its periods one by one: each time the poll
// waits for a period it asks here, and the period ends when the test says
// so. The test then knows, without the wall clock, what the poll has done:
// a query is made before the next period is asked for.
type periods struct{ asked chan period }

type period struct {
	d   time.Duration
	end chan time.Time
}

func newPeriods() *periods { return &periods{asked: make(chan period)} }

// after is PollOptions.After. A period's end is unbuffered: once the test
// has sent it, the poll has taken it.
func (p *periods) after(d time.Duration) <-chan time.Time {
	end := make(chan time.Time)
	p.asked <- period{d: d, end: end}
	return end
}

// next is the period the poll asks for next; the deadline bounds a poll
// that never asks (a failure), it times nothing.
func (p *periods) next(t *testing.T, what string) period {
	t.Helper()
	select {
	case got := <-p.asked:
		return got
	case <-time.After(10 * time.Second):
		t.Fatalf("the poll never asked for a period: %s", what)
		return period{}
	}
}

// none says the poll has not asked for a period (it is idle, or busy).
func (p *periods) none(t *testing.T, what string) {
	t.Helper()
	select {
	case got := <-p.asked:
		t.Fatalf("%s: the poll asked for a period of %v", what, got.d)
	default:
	}
}

// An idle instance does not poll; with requests waiting it reads all their
// keys in one query a period, and an outcome no announcement brought
// reaches its request; once nobody waits it goes idle again. The poll's
// periods are handed out by the test, so nothing depends on wall time.
func TestPollAnswersWhatNoAnnouncementBrought(t *testing.T) {
	n := NewNotifier()
	d := &decidedElsewhere{decided: map[store.Key]store.Outcome{}}
	p := newPeriods()
	const every = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Poll(ctx, d.read, PollOptions{Every: every, After: p.after})
	}()
	defer func() { cancel(); <-done }()

	p.none(t, "idle")
	a, stopA := n.Wait("f", "a")
	defer stopA()
	b, stopB := n.Wait("f", "b")
	defer stopB()
	first := p.next(t, "requests wait")
	if first.d != every {
		t.Fatalf("first period %v, want %v", first.d, every)
	}
	if q := d.queries(); len(q) != 0 {
		t.Fatalf("queries before the first period ended: %v", q)
	}
	first.end <- time.Time{}
	second := p.next(t, "after the first query")
	p.none(t, "one period at a time")
	if q := d.queries(); len(q) != 1 || len(q[0]) != 2 {
		t.Fatalf("queries after one period: %v, want one for both waiting keys", q)
	}
	d.decide("f", "a")
	second.end <- time.Time{}
	third := p.next(t, "after the second query")
	if third.d != every {
		t.Fatalf("period after the poll found an outcome: %v, want %v", third.d, every)
	}
	select {
	case o := <-a:
		if o.ID != "id-a" {
			t.Fatalf("outcome %+v, want the one decided elsewhere", o)
		}
	default:
		t.Fatal("the poll found the outcome and did not hand it to the waiting request")
	}
	select {
	case o := <-b:
		t.Fatalf("an undecided key got %+v", o)
	default:
	}
	stopB()
	stopA()
	// Once nobody waits, the period's end makes no query and the poll
	// asks for no new period: it goes idle, where it stops when told. (A
	// poll that asked for a period would be stuck handing the request
	// over, and it is taken here instead.)
	queried := len(d.queries())
	third.end <- time.Time{}
	cancel()
	select {
	case <-done:
	case got := <-p.asked:
		t.Fatalf("with nobody waiting the poll asked for a period of %v", got.d)
	}
	if q := d.queries(); len(q) != queried {
		t.Fatalf("queries while nobody waited: %v", q[queried:])
	}
}
