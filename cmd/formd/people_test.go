package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
)

// people are the registrations concurrent clients send to the crash form
// (crashForms): each a new person, numbered in order, under the key
// prefix and the number — or, with retry, first anyone whose answer was
// lost, again under the same key, as a client's outbox does.
type people struct {
	prefix string
	retry  bool

	mu      sync.Mutex
	next    int
	acked   map[string]bool // key → acknowledged (2xx)
	pending map[string]int  // key → person whose answer was lost (no answer, 5xx)
}

func newPeople(prefix string, retry bool) *people {
	return &people{prefix: prefix, retry: retry, acked: map[string]bool{}, pending: map[string]int{}}
}

// send submits the next person to the server at url and records the
// answer; 0 means no answer arrived.
func (p *people) send(c *http.Client, url string) (key string, status int) {
	p.mu.Lock()
	person := -1
	for k, n := range p.pending {
		person, key = n, k
		delete(p.pending, k)
		break
	}
	if person < 0 {
		person, key = p.next, fmt.Sprintf("%s%d", p.prefix, p.next)
		p.next++
	}
	p.mu.Unlock()
	status = submit(c, url, key, person)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case acknowledged(status):
		p.acked[key] = true
	case p.retry && answerLost(status):
		p.pending[key] = person
	}
	return key, status
}

// acknowledged says a submission's answer was 2xx: it is stored.
func acknowledged(status int) bool { return status >= 200 && status < 300 }

// answerLost says no answer came (0) or a refusal to decide (5xx): the
// submission is sent again under its key.
func answerLost(status int) bool { return status == 0 || status >= 500 }

// resendLost sends everyone whose answer was lost again, under the same
// key, until the server at url acknowledges them.
func (p *people) resendLost(t *testing.T, c *http.Client, url string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, person := range p.pending {
		poll.UntilNil(t, key+" acknowledged after the last restart", 30*time.Second, func() error {
			if status := submit(c, url, key, person); !acknowledged(status) {
				return fmt.Errorf("status %d", status)
			}
			return nil
		})
		p.acked[key] = true
		delete(p.pending, key)
	}
}

// ackedKeys is a copy of the keys acknowledged so far.
func (p *people) ackedKeys() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.acked)
}

// counts says how many keys are acknowledged and how many answers are
// lost, to be sent again.
func (p *people) counts() (acked, lost int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked), len(p.pending)
}

// startClients runs n clients, each calling send over and over until
// ctx ends; wait returns once all have stopped.
func startClients(ctx context.Context, n int, send func()) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				send()
			}
		})
	}
	return wg.Wait
}

// loadClient is an HTTP client for many concurrent submissions to one
// server.
func loadClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}
