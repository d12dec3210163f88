package scaleout

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// TestCheckInAtTwoInstances: two doors scan the same ticket at once, one
// at each of two instances sharing PostgreSQL and NATS, for ten tickets:
// each ticket gets exactly one 201 checked_in and one 200
// already_checked_in naming the first's door and time.
func TestCheckInAtTwoInstances(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	d := newDeploymentOf(t, nurl, storeURL, `id: gate
site: loadtest
checkin: true
fields:
  - {name: name, type: text, required: true}
`)
	a, b := d.start(t, "formd-a"), d.start(t, "formd-b")
	token := adminToken(t, storeURL)
	call := func(base, method, path, key, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, nil
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var doc map[string]any
		_ = json.Unmarshal(raw, &doc)
		return res.StatusCode, doc
	}
	for i := range 10 {
		st, doc := call(a.url(), "POST", "/v1/forms/gate/submissions", fmt.Sprint("reg-", i), fmt.Sprintf(`{"name":"P%d"}`, i))
		manage, _ := doc["manage"].(string)
		if st != 201 || manage == "" {
			t.Fatalf("register: %d %v", st, doc)
		}
		st, doc = call(b.url(), "GET", strings.Replace(manage, "/e/", "/v1/entries/", 1), "", "")
		tk, _ := doc["ticket"].(string)
		if st != 200 || tk == "" {
			t.Fatalf("ticket from the other instance: %d %v", st, doc)
		}
		var wg sync.WaitGroup
		answers := make([]map[string]any, 2)
		codes := make([]int, 2)
		for j, in := range []*instance{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[j], answers[j] = call(in.url(), "POST", "/v1/admin/forms/gate/checkins", fmt.Sprintf("scan-%d-%d", i, j),
					fmt.Sprintf(`{"ticket":%q,"door":"door-%d"}`, tk, j))
			}()
		}
		wg.Wait()
		if codes[0]+codes[1] != 401 || answers[0]["door"] != answers[1]["door"] || answers[0]["checked_in_at"] != answers[1]["checked_in_at"] {
			t.Fatalf("ticket %d: %d %v and %d %v, want one 201 and one 200 naming the same first check-in", i, codes[0], answers[0], codes[1], answers[1])
		}
	}
}
