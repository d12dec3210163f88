package scaleout

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// Three instances on NATS and PostgreSQL deliver one form's webhooks
// while one of them is killed with SIGKILL and restarted: every event of
// every entry reaches the receiver, and never do two instances deliver
// one event at the same time (the receiver counts deliveries of one id
// that overlap).
func TestThreeInstancesDeliverEveryEventOnceAtATime(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	var mu sync.Mutex
	received := map[string]int{}
	inFlight := map[string]int{}
	var overlaps atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		inFlight[id]++
		if inFlight[id] > 1 {
			overlaps.Add(1)
		}
		mu.Unlock()
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond) // a receiver's own work
		mu.Lock()
		inFlight[id]--
		received[id]++
		mu.Unlock()
	}))
	defer recv.Close()
	forms := formYAML(150) + fmt.Sprintf("notify:\n  webhooks: [{url: %q, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]\n", recv.URL)
	d := newDeploymentOf(t, nurl, storeURL, forms, "--webhook-allow", "127.0.0.0/8", "--delivery-lease", "3s")
	// Started from the test's goroutine: a start that fails stops the test
	// there (t.Fatal), rather than leaving it with fewer instances.
	var ins []*instance
	for i := range 3 {
		ins = append(ins, d.start(t, fmt.Sprint("formd-", i+1)))
	}
	l := load{submissions: 600, people: 500, clients: 16}
	st := &stats{}
	c := newClient(urlsOf(ins), st)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st.faultAt(ctx, int64(l.submissions/3), func() {
		ins[2].kill9()
		ins[2].run()
	})
	answers := l.run(ctx, c, "wh")
	check(t, checker{storeURL: storeURL, natsURL: nurl, stream: d.stream, capacity: 150}, answers, l.people)

	// Wait for the outbox to empty, then compare the events with what
	// arrived.
	conn, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	poll.UntilNil(t, "the outbox to empty", time.Minute, func() error {
		var left int
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM deliveries WHERE state <> 'delivered')
			+ (SELECT count(*) FROM events WHERE NOT fanned)`).Scan(&left)
		if err == nil && left > 0 {
			err = fmt.Errorf("%d deliveries or events left", left)
		}
		return err
	})
	evRows, err := conn.Query(ctx, `SELECT entry_id, type, n FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	mu.Lock()
	defer mu.Unlock()
	for evRows.Next() {
		var entry, typ string
		var n int
		evRows.Scan(&entry, &typ, &n)
		id := "evt_" + entry + "_" + typ[len("submission."):]
		if n > 1 {
			id += fmt.Sprint("_", n)
		}
		events++
		if received[id] == 0 {
			t.Errorf("event %s never reached the receiver", id)
		}
	}
	if events == 0 {
		t.Fatal("no events: the test proved nothing")
	}
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d deliveries of one event overlapped: two instances sent it at once", n)
	}
	twice := 0
	for _, n := range received {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d events, each received; %d received more than once (a kill cut their first delivery), 0 at the same time", events, twice)
	if t.Failed() {
		logTails(t, ins)
	}
}
