package intake_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const sessionForms = `
id: fair-sessions
fields:
  - {name: name, type: text, required: true}
  - name: session
    type: select
    required: true
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 3}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 2}
when_full: reject
unique: [[name]]
`

// TestOptionPlacesOverHTTP: people racing for two sessions get exactly
// each session's places, on the embedded fast path and through the
// processor; the rest are refused with 409 capacity-reached naming the
// full session, the answer replayed byte for byte, and the public
// definition says which sessions are full.
func TestOptionPlacesOverHTTP(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast path %v", fast), func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, sessionForms, servertest.Options{Config: func(c *config.Config) { c.DecideAtAppend = fast }})
			post := func(key, session string, i int) (int, []byte) {
				body := fmt.Sprintf(`{"name":"person %d","session":%q}`, i, session)
				req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/forms/fair-sessions/submissions", bytes.NewBufferString(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", key)
				resp, err := servertest.Client().Do(req)
				if err != nil {
					t.Error(err)
					return 0, nil
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			const people = 20
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				stored  = map[string]int{}
				refused = map[string][]byte{}
			)
			for i := range people {
				session := []string{"morning", "afternoon"}[i%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprint("k", i)
					code, b := post(key, session, i)
					mu.Lock()
					defer mu.Unlock()
					switch code {
					case http.StatusCreated:
						stored[session]++
					case http.StatusConflict:
						var p problem.Problem
						if err := json.Unmarshal(b, &p); err != nil || p.Code != problem.CodeCapacityReached || p.Option != session {
							t.Errorf("%s (%s): %s, want capacity-reached naming %s", key, session, b, session)
						}
						refused[key] = b
					default:
						t.Errorf("%s: %d %s", key, code, b)
					}
				}()
			}
			wg.Wait()
			if stored["morning"] != 3 || stored["afternoon"] != 2 {
				t.Fatalf("stored %v: want 3 mornings and 2 afternoons", stored)
			}
			for key, first := range refused {
				var i int
				fmt.Sscanf(key, "k%d", &i)
				if code, b := post(key, []string{"morning", "afternoon"}[i%2], i); code != http.StatusConflict || !bytes.Equal(b, first) {
					t.Fatalf("retry of %s: %d %s, want the first answer %s", key, code, b, first)
				}
				break
			}
			resp, err := servertest.Client().Get(h.URL + "/v1/forms/fair-sessions")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var pub intake.PublicForm
			if err := json.NewDecoder(resp.Body).Decode(&pub); err != nil {
				t.Fatal(err)
			}
			if pub.Places == nil || pub.Places.Field != "session" || len(pub.Places.Options) != 2 || pub.Places.Waitlist {
				t.Fatalf("public places %+v", pub.Places)
			}
			for _, o := range pub.Places.Options {
				if o.Limit == nil || o.Left == nil || *o.Left != 0 || !o.Full {
					t.Errorf("option %s: %+v, want full (the definition's places may be a moment old, never more than the store's)", o.Value, o)
				}
			}
		})
	}
}
