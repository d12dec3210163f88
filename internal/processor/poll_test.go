package processor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
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

// An idle instance does not poll; with requests waiting it reads all their
// keys in one query a period, and an outcome no announcement brought
// reaches its request.
func TestPollAnswersWhatNoAnnouncementBrought(t *testing.T) {
	n := NewNotifier()
	d := &decidedElsewhere{decided: map[store.Key]store.Outcome{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Poll(ctx, d.read, PollOptions{Every: 5 * time.Millisecond})
	}()
	defer func() { cancel(); <-done }()

	poll.Holds(t, "an idle instance makes no query", 100*time.Millisecond, func() bool { return len(d.queries()) == 0 })

	a, stopA := n.Wait("f", "a")
	defer stopA()
	b, stopB := n.Wait("f", "b")
	defer stopB()
	poll.Until(t, "a query for both waiting keys", 5*time.Second, func() bool {
		for _, q := range d.queries() {
			if len(q) == 2 {
				return true
			}
		}
		return false
	})
	for _, q := range d.queries() {
		if len(q) > 2 {
			t.Fatalf("a query for %v, with two keys waiting", q)
		}
	}
	d.decide("f", "a")
	select {
	case o := <-a:
		if o.ID != "id-a" {
			t.Fatalf("outcome %+v, want the one decided elsewhere", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the poll never answered the waiting request")
	}
	select {
	case o := <-b:
		t.Fatalf("an undecided key got %+v", o)
	default:
	}
	stopB()
	stopA()
	// Once nobody waits, the queries stop.
	poll.Until(t, "the poll to notice nobody waits", 5*time.Second, func() bool {
		before := len(d.queries())
		time.Sleep(20 * time.Millisecond)
		return len(d.queries()) == before
	})
	quiet := len(d.queries())
	poll.Holds(t, "no more queries", 100*time.Millisecond, func() bool { return len(d.queries()) == quiet })
}
