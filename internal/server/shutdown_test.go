package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.Stop() // graceful, with requests in flight
	close(stop)
	wg.Wait()

	again := servertest.Start(t, "", servertest.Options{Data: h.Data})
	ctx := context.Background()
	for _, key := range acked {
		o, ok, err := again.Server.Store.Outcome(ctx, "f", key)
		if err != nil || !ok || o.Status != store.StatusStored {
			t.Fatalf("acknowledged %s: %+v %v %v", key, o, ok, err)
		}
	}
	if len(acked) == 0 {
		t.Fatal("nothing acknowledged")
	}
	st, err := again.Server.Journal.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Backlog != 0 {
		// Entries journaled but not decided before the stop are decided
		// after the restart; wait for that.
		deadline := time.Now().Add(10 * time.Second)
		for st.Backlog != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			st, _ = again.Server.Journal.Stats(ctx)
		}
		if st.Backlog != 0 {
			t.Fatalf("backlog %d after restart", st.Backlog)
		}
	}
	t.Logf("%d acknowledged before the stop, all stored", len(acked))
}
