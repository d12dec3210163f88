package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// sessionsYAML is the scale-out form with two sessions of perSession
// places each, each with its own waitlist.
func sessionsYAML(perSession int) string {
	return fmt.Sprintf(`id: %s
site: loadtest
title: Scale-out test with sessions
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
  - name: session
    type: select
    required: true
    options:
      - {value: s1, capacity: %d}
      - {value: s2, capacity: %d}
unique: [[email]]
when_full: waitlist
`, formID, perSession, perSession)
}

// Three instances share one NATS and one PostgreSQL for a form with two
// sessions; one is killed with SIGKILL a third of the way through the
// load and restarted. Every acknowledged submission is stored once, no
// session is ever above its places, and cancellations sent to the three
// instances at once promote each session's earliest waiting entries,
// each exactly once.
func TestThreeInstancesTwoSessionsSurviveKill9(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	const perSession, people = 30, 200
	d := newDeploymentOf(t, nurl, storeURL, sessionsYAML(perSession))
	var ins []*instance
	for i := range 3 {
		ins = append(ins, d.start(t, fmt.Sprint("formd-", i+1)))
	}
	l := load{submissions: 400, people: people, clients: 16, doubleClick: 10, sessions: 2}
	st := &stats{}
	c := newClient(urlsOf(ins), st)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// killed is closed once the kill -9 happened, restarted once the
	// instance runs again: on a fast machine the load can end while the
	// killed instance is still starting, which is not a failure of the
	// load (the restart is awaited below).
	killed, restarted := make(chan struct{}), make(chan struct{})
	st.faultAt(ctx, int64(l.submissions/3), func() {
		ins[1].kill9()
		close(killed)
		ins[1].run()
		close(restarted)
	})
	answers := l.run(ctx, c, "s9")
	select {
	case <-killed:
	default:
		t.Fatal("the load ended before an instance was killed")
	}
	<-restarted
	check(t, checker{storeURL: storeURL, natsURL: nurl, stream: d.stream, capacity: 2 * perSession}, answers, people)

	db, err := pgx.Connect(context.Background(), storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	bySession := func(status string) map[string][]string {
		rs, err := db.Query(context.Background(), `SELECT place, id FROM entries WHERE form = $1 AND status = $2 ORDER BY seq, id`, formID, status)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for rs.Next() {
			var place *string
			var id string
			if err := rs.Scan(&place, &id); err != nil {
				t.Fatal(err)
			}
			if place == nil {
				t.Fatalf("%s entry %s holds no session", status, id)
			}
			out[*place] = append(out[*place], id)
		}
		return out
	}
	checkPlaces := func(when string) {
		stored := bySession("stored")
		for _, s := range []string{"s1", "s2"} {
			var taken int
			if err := db.QueryRow(context.Background(), `SELECT taken FROM option_places WHERE form = $1 AND value = $2`, formID, s).Scan(&taken); err != nil {
				t.Fatal(err)
			}
			if len(stored[s]) != perSession || taken != perSession {
				t.Fatalf("%s: session %s has %d stored, %d taken; want exactly its %d places", when, s, len(stored[s]), taken, perSession)
			}
		}
	}
	checkPlaces("after the load")

	// Cancel a third of each session's stored entries, spread over the
	// three instances at once.
	token := adminToken(t, storeURL)
	stored, waiting := bySession("stored"), bySession("waitlisted")
	const cancels = perSession / 3
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		promoted = map[string]int{}
		errs     []string
	)
	for _, s := range []string{"s1", "s2"} {
		for i, id := range stored[s][:cancels] {
			wg.Go(func() {
				base := ins[i%len(ins)].url()
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/admin/forms/"+formID+"/entries/"+id+"/cancel", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err.Error())
					return
				}
				defer resp.Body.Close()
				var got struct{ Promoted []string }
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil {
					errs = append(errs, fmt.Sprintf("cancel %s: %d %s", id, resp.StatusCode, b))
					return
				}
				for _, p := range got.Promoted {
					promoted[p]++
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("cancellations: %v", errs)
	}
	for _, s := range []string{"s1", "s2"} {
		for _, id := range waiting[s][:cancels] {
			if promoted[id] != 1 {
				t.Errorf("session %s: %s, among its %d earliest waiting, promoted %d times, want once", s, id, cancels, promoted[id])
			}
		}
	}
	if n := len(promoted); n != 2*cancels {
		var ids []string
		for id := range promoted {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		t.Errorf("%d promoted, want %d (one per cancellation): %v", n, 2*cancels, ids)
	}
	checkPlaces("after the cancellations")
	if t.Failed() {
		logTails(t, ins)
	}
}
