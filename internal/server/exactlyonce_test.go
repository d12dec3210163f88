package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
)

// TestConcurrentRegistrations is the peak the incident reports describe,
// in miniature: 200 goroutines register 500 distinct people into a form
// with 100 places; half of the people send their request three times at
// once with the same key (double clicks, retries); one in ten reuses
// another person's phone number written differently. Afterwards exactly
// 100 are stored, every other person is waitlisted (or rejected) or refused
// as a duplicate, and no key and no phone is live twice.
//
// It runs on both paths of the embedded drivers: decided in the commit
// that journals each entry (the default), and through the processor.
func TestConcurrentRegistrations(t *testing.T) {
	for _, atAppend := range []bool{true, false} {
		for _, whenFull := range []string{"waitlist", "reject"} {
			t.Run(fmt.Sprintf("%s/decide-at-append=%v", whenFull, atAppend), func(t *testing.T) {
				t.Parallel()
				runConcurrentRegistrations(t, whenFull, atAppend)
			})
		}
	}
}

const (
	people   = 500
	places   = 100
	workers  = 200
	phoneFmt = "1380013%04d"
)

type person struct {
	key, name, phone, phoneE164 string
	copies                      int
}

func makePeople() []person {
	ps := make([]person, people)
	for i := range ps {
		owner := i
		if i%10 == 9 {
			owner = i - 1 // reuses the previous person's phone
		}
		national := fmt.Sprintf(phoneFmt, owner)
		ps[i] = person{
			key:       fmt.Sprintf("key-%03d", i),
			name:      fmt.Sprintf("Person %d", i),
			phone:     national,
			phoneE164: "+86" + national,
			copies:    1,
		}
		if i%10 == 9 {
			// The same number as the owner, written the other way.
			ps[i].phone = "+86 " + national[:3] + " " + national[3:7] + " " + national[7:]
		}
		if i%2 == 0 {
			ps[i].copies = 3
		}
	}
	return ps
}

type answer struct {
	status int
	body   []byte
	code   string
}

func runConcurrentRegistrations(t *testing.T, whenFull string, atAppend bool) {
	forms := fmt.Sprintf(`
id: peak
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
capacity: %d
when_full: %s
`, places, whenFull)
	h := servertest.Start(t, forms, servertest.Options{Config: func(c *config.Config) { c.DecideAtAppend = atAppend }})
	client := servertest.Client()
	ps := makePeople()

	answers := make([][]answer, len(ps))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				p := ps[i]
				got := make([]answer, p.copies)
				var inner sync.WaitGroup
				for c := range p.copies {
					inner.Go(func() { got[c] = post(t, client, h.URL, p) })
				}
				inner.Wait()
				answers[i] = got
			}
		})
	}
	for i := range ps {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every copy of one submission got the same answer: one decision.
	outcome := map[string]int{}
	for i, got := range answers {
		first := got[0]
		for _, a := range got {
			if a.status != 201 && a.status != 200 && a.status != 409 {
				t.Fatalf("%s: status %d: %s", ps[i].key, a.status, a.body)
			}
			if a.code != first.code || !bytes.Equal(a.body, first.body) {
				t.Fatalf("%s: copies answered differently:\n%s\n%s", ps[i].key, first.body, a.body)
			}
		}
		created := 0
		for _, a := range got {
			if a.status == 201 {
				created++
			}
		}
		if first.code == "" && created != 1 {
			t.Fatalf("%s: %d copies answered 201; exactly one is the first answer", ps[i].key, created)
		}
		outcome[decision(first)]++
	}

	// What the store holds agrees, and nothing is live twice.
	rows := map[string]store.Row{}
	livePhones := map[string]string{}
	stored := 0
	err := h.Server.Store.Export(context.Background(), "peak", func(r store.Row) error {
		if _, dup := rows[r.Key]; dup {
			t.Errorf("key %s stored twice", r.Key)
		}
		rows[r.Key] = r
		var data struct{ Phone string }
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return err
		}
		if r.Status == store.StatusStored || r.Status == store.StatusWaitlisted {
			if other, dup := livePhones[data.Phone]; dup {
				t.Errorf("phone %s live twice: %s and %s", data.Phone, other, r.Key)
			}
			livePhones[data.Phone] = r.Key
		}
		if r.Status == store.StatusStored {
			stored++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != people {
		t.Fatalf("%d entries in the store for %d people", len(rows), people)
	}
	if stored != places || outcome["stored"] != places {
		t.Fatalf("stored %d (answers say %d), want exactly %d; outcomes %v", stored, outcome["stored"], places, outcome)
	}
	for i, p := range ps {
		r := rows[p.key]
		if want := decision(answers[i][0]); r.Status != want {
			t.Errorf("%s: store says %s, the answer said %s", p.key, r.Status, want)
		}
	}
	switch whenFull {
	case "waitlist":
		// 450 distinct phones: 100 stored, 350 waitlisted, and the 50
		// reusers refused (their number was live, stored or waitlisted).
		if outcome["waitlisted"] != people-people/10-places || outcome["duplicate"] != people/10 {
			t.Fatalf("outcomes %v", outcome)
		}
	case "reject":
		// A rejected person holds no claim, so a reuser of a rejected number
		// is rejected too, not a duplicate: only live numbers block.
		if outcome["rejected"]+outcome["duplicate"] != people-places || outcome["duplicate"] > people/10 {
			t.Fatalf("outcomes %v", outcome)
		}
	}
	// Each person's entry was decided once, where the path says.
	want := 0
	if atAppend {
		want = people
	}
	if n := metric(t, h.MetricsURL, "formd_decided_at_append_total"); n != want {
		t.Fatalf("%d entries decided at append, want %d", n, want)
	}
	t.Logf("outcomes: %v", outcome)
}

// metric reads a counter from /metrics.
func metric(t *testing.T, base, name string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var n float64
			fmt.Sscan(v, &n)
			return int(n)
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

func post(t *testing.T, c *http.Client, base string, p person) answer {
	body := fmt.Sprintf(`{"name":%q,"phone":%q}`, p.name, p.phone)
	req, err := http.NewRequest("POST", base+"/v1/forms/peak/submissions", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", p.key)
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s: %v", p.key, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, body: b}
	if resp.StatusCode >= 400 {
		var pr struct{ Code string }
		json.Unmarshal(b, &pr)
		a.code = pr.Code
	}
	return a
}

// decision names the outcome an answer states.
func decision(a answer) string {
	switch a.code {
	case "duplicate-entry":
		return store.StatusDuplicate
	case "capacity-reached":
		return store.StatusRejected
	case "":
		var doc struct{ Status string }
		json.Unmarshal(a.body, &doc)
		return doc.Status
	}
	return "error " + a.code
}
