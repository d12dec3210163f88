package processor

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/formd/formd/internal/store"
)

// Notifier wakes the requests waiting for the outcome of a (form, key). A
// request registers before it appends to the journal, so an outcome cannot
// be published before anyone listens for it.
type Notifier struct {
	seed   maphash.Seed
	shards [64]notifierShard
	// waiting counts the registered waits; woken hears the first of them
	// after none (the poll sleeps until then).
	waiting atomic.Int64
	woken   chan struct{}
	// delivered counts outcomes handed to a waiting request, however they
	// came (the poll backs off while they come without it).
	delivered atomic.Int64
}

type notifierShard struct {
	mu      sync.Mutex
	waiters map[waitKey][]chan store.Outcome
}

type waitKey struct{ form, key string }

// NewNotifier makes an empty notifier.
func NewNotifier() *Notifier {
	n := &Notifier{seed: maphash.MakeSeed(), woken: make(chan struct{}, 1)}
	for i := range n.shards {
		n.shards[i].waiters = map[waitKey][]chan store.Outcome{}
	}
	return n
}

func (n *Notifier) shard(k waitKey) *notifierShard {
	var h maphash.Hash
	h.SetSeed(n.seed)
	h.WriteString(k.form)
	h.WriteByte(0)
	h.WriteString(k.key)
	return &n.shards[h.Sum64()%uint64(len(n.shards))]
}

// Wait registers interest in (form, key). The channel receives the outcome
// once; call the returned function when done waiting.
func (n *Notifier) Wait(form, key string) (<-chan store.Outcome, func()) {
	k := waitKey{form, key}
	ch := make(chan store.Outcome, 1)
	s := n.shard(k)
	s.mu.Lock()
	s.waiters[k] = append(s.waiters[k], ch)
	s.mu.Unlock()
	if n.waiting.Add(1) == 1 {
		select {
		case n.woken <- struct{}{}:
		default:
		}
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() { n.waiting.Add(-1) })
		s.mu.Lock()
		list := s.waiters[k]
		for i, c := range list {
			if c == ch {
				list[i] = list[len(list)-1]
				list = list[:len(list)-1]
				break
			}
		}
		if len(list) == 0 {
			delete(s.waiters, k)
		} else {
			s.waiters[k] = list
		}
		s.mu.Unlock()
	}
}

// Publish hands an outcome to everyone waiting for its key.
func (n *Notifier) Publish(o store.Outcome) {
	k := waitKey{o.Form, o.Key}
	s := n.shard(k)
	s.mu.Lock()
	list := s.waiters[k]
	delete(s.waiters, k)
	s.mu.Unlock()
	if len(list) > 0 {
		n.delivered.Add(1)
	}
	for _, ch := range list {
		select {
		case ch <- o:
		default:
		}
	}
}

// keys lists up to max of the keys with a request waiting.
func (n *Notifier) keys(max int) []store.Key {
	var out []store.Key
	for i := range n.shards {
		s := &n.shards[i]
		s.mu.Lock()
		for k := range s.waiters {
			if len(out) == max {
				break
			}
			out = append(out, store.Key{Form: k.form, Key: k.key})
		}
		s.mu.Unlock()
	}
	return out
}
