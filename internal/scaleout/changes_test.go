package scaleout

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
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// Three instances share one NATS and one PostgreSQL for a form with two
// sessions. Participants of the first session change to the second
// (PATCH /v1/entries/{token}, through any instance) while newcomers
// register for both through the others: no session is ever above its
// places, every place a session counts is held by a stored entry of it,
// and no place is lost (a session with someone waiting has no free
// place).
func TestThreeInstancesChangeOfSessionNeverOversells(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	const perSession, movers, newcomers = 8, 8, 24
	yaml := sessionsYAML(perSession) + "edit_until: 2099-01-01T00:00:00Z\n"
	d := newDeploymentOf(t, nurl, storeURL, yaml)
	var ins []*instance
	for i := range 3 {
		ins = append(ins, d.start(t, fmt.Sprint("formd-", i+1)))
	}
	client := &http.Client{Timeout: 30 * time.Second}
	submit := func(base, key, session string) (string, error) {
		body := fmt.Sprintf(`{"name":%q,"email":"%s@example.org","session":%q}`, key, key, session)
		for {
			req, _ := http.NewRequest(http.MethodPost, base+"/v1/forms/"+formID+"/submissions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			resp, err := client.Do(req)
			if err != nil {
				return "", err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 202 || resp.StatusCode >= 500 {
				continue // processing or unavailable: the same key again
			}
			var a struct{ Manage string }
			if resp.StatusCode/100 != 2 || json.Unmarshal(b, &a) != nil {
				return "", fmt.Errorf("submit %s: %d %s", key, resp.StatusCode, b)
			}
			return strings.TrimPrefix(a.Manage, "/e/"), nil
		}
	}
	// The first session is filled by the movers.
	tokens := make([]string, movers)
	for i := range movers {
		tok, err := submit(ins[i%3].url(), fmt.Sprint("m", i), "s1")
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []string
		full int
	)
	fail := func(s string) { mu.Lock(); errs = append(errs, s); mu.Unlock() }
	for i, tok := range tokens {
		wg.Go(func() {
			body := fmt.Sprintf(`{"name":"m%d","email":"m%d@example.org","session":"s2"}`, i, i)
			for {
				req, _ := http.NewRequest(http.MethodPatch, ins[(i+1)%3].url()+"/v1/entries/"+tok, bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("If-Match", `"1"`)
				resp, err := client.Do(req)
				if err != nil {
					fail(err.Error())
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode >= 500:
					continue // the same change again: If-Match makes it once
				case resp.StatusCode == 200:
				case resp.StatusCode == 409 && bytes.Contains(b, []byte(`"option":"s2"`)):
					mu.Lock()
					full++
					mu.Unlock()
				default:
					fail(fmt.Sprintf("change %d: %d %s", i, resp.StatusCode, b))
				}
				return
			}
		})
	}
	for i := range newcomers {
		wg.Go(func() {
			if _, err := submit(ins[(i+2)%3].url(), fmt.Sprint("n", i), []string{"s1", "s2"}[i%2]); err != nil {
				fail(err.Error())
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failures: %v", len(errs), errs)
	}
	db, err := pgx.Connect(context.Background(), storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	// Every newcomer is decided (the processor may still be at work).
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM entries WHERE form = $1`, formID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == movers+newcomers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d entries decided", n, movers+newcomers)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range []string{"s1", "s2"} {
		var taken, capacity, stored, waiting int
		if err := db.QueryRow(context.Background(), `SELECT taken, capacity,
			(SELECT count(*) FROM entries WHERE form = $1 AND status = 'stored' AND place = $2),
			(SELECT count(*) FROM entries WHERE form = $1 AND status = 'waitlisted' AND place = $2)
			FROM option_places WHERE form = $1 AND value = $2`, formID, s).Scan(&taken, &capacity, &stored, &waiting); err != nil {
			t.Fatal(err)
		}
		t.Logf("session %s: %d taken of %d, %d stored, %d waiting (%d changes refused as full)", s, taken, capacity, stored, waiting, full)
		if taken > capacity || stored != taken {
			t.Errorf("session %s: %d taken of %d by %d stored entries", s, taken, capacity, stored)
		}
		if waiting > 0 && taken < capacity {
			t.Errorf("session %s: a place lost: %d of %d taken while %d wait", s, taken, capacity, waiting)
		}
	}
	// Each version a change replaced is kept, once.
	var versions, changed int
	if err := db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM entry_versions),
		(SELECT count(*) FROM entries WHERE form = $1 AND version = 2)`, formID).Scan(&versions, &changed); err != nil {
		t.Fatal(err)
	}
	if versions != changed || changed != movers-full {
		t.Errorf("%d versions kept, %d entries changed, %d changes made", versions, changed, movers-full)
	}
	if t.Failed() {
		logTails(t, ins)
	}
}
