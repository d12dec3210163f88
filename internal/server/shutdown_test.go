package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
)

// TestGracefulShutdownKeepsEveryAck stops an instance in the middle of a
// stream of submissions, as SIGTERM does, restarts it on the same files,
// and checks that every acknowledged submission is stored and that the
// journal has nothing left undecided.
func TestGracefulShutdownKeepsEveryAck(t *testing.T) {
	t.Parallel()
	forms := "id: f\nfields: [{name: name, type: text, required: true}]\n"
	h := servertest.Start(t, forms, servertest.Options{})
	client := servertest.Client()
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	// The workers stop after the server does, and also when the test
	// fails before that.
	stopWorkers := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWorkers()
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d-%d", w, i)
				req, _ := http.NewRequest("POST", h.URL+"/v1/forms/f/submissions", strings.NewReader(`{"name":"`+key+`"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := client.Do(req)
				if err != nil {
					continue // refused while shutting down: not acknowledged
				}
				resp.Body.Close()
				if resp.StatusCode >= 200 && resp.StatusCode < 300 {
					mu.Lock()
					acked = append(acked, key)
					mu.Unlock()
				}
			}
		})
	}
	// Without a stream of acknowledgements the stop would prove nothing.
	poll.Until(t, "200 acknowledged submissions before the stop", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	h.Stop() // graceful, with requests in flight
	stopWorkers()

	again := servertest.Start(t, "", servertest.Options{Data: h.Data})
	ctx := context.Background()
	for _, key := range acked {
		o, ok, err := again.Server.Store.Outcome(ctx, "f", key)
		if err != nil || !ok || o.Status != store.StatusStored {
			t.Fatalf("acknowledged %s: %+v %v %v", key, o, ok, err)
		}
	}
	// Entries journaled but not decided before the stop are decided after
	// the restart.
	poll.UntilNil(t, "an empty journal backlog after the restart", 10*time.Second, func() error {
		st, err := again.Server.Journal.Stats(ctx)
		if err != nil {
			return err
		}
		if st.Backlog != 0 {
			return fmt.Errorf("backlog %d", st.Backlog)
		}
		return nil
	})
	t.Logf("%d acknowledged before the stop, all stored", len(acked))
}
