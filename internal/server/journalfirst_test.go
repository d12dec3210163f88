package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

const journalFirstForms = uploadForms + `---
id: pow
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000}
---
id: keep
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000, challenge_fallback: spam}
`

// TestJournalFirstAnswers (issue 28, DESIGN invariant 12): the checks
// that need the store are the decision's now, and when it answers within
// the wait a person gets the answers intake's checks gave before — on
// the embedded fast path, through the processor, and on PostgreSQL — and
// each of those submissions was journaled first.
func TestJournalFirstAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*config.Config)
	}{
		{"fast-path", func(c *config.Config) { c.DecideAtAppend = true }},
		{"processor", func(c *config.Config) { c.DecideAtAppend = false }},
		{"postgres", func(c *config.Config) { c.Store = pgtest.URL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, journalFirstForms, servertest.Options{Config: tc.cfg})
			c := servertest.Client()
			meta := "field " + base64.StdEncoding.EncodeToString([]byte("photo"))
			res := tusDo(t, c, "POST", h.URL+"/v1/forms/exam/uploads", map[string]string{"Upload-Length": "100", "Upload-Metadata": meta}, nil)
			loc := res.Header.Get("Location")
			incomplete := loc[len(loc)-32:]
			used := upload(t, h, photoBytes(2000, 1))
			if a := submitWithPhoto(t, h, "holder", "Ann", used); a.status != 201 {
				t.Fatalf("the first submission naming a file: %d %s", a.status, a.body)
			}
			type fieldErr struct{ Field, Code string }
			var p struct {
				Code   string
				Errors []fieldErr
			}
			for _, x := range []struct {
				key, id     string
				status      int
				code, field string
			}{
				{"unknown", "0123456789abcdef0123456789abcdef", 422, "validation-failed", "upload-not-found"},
				{"incomplete", incomplete, 422, "validation-failed", "upload-incomplete"},
				{"used", used, 422, "upload-already-used", "upload-already-used"},
			} {
				for _, send := range []string{"first", "retry"} {
					a := submitWithPhoto(t, h, x.key, "Bo", x.id)
					p.Code, p.Errors = "", nil
					json.Unmarshal(a.body, &p) //nolint:errcheck // checked below
					if a.status != x.status || p.Code != x.code || len(p.Errors) != 1 || p.Errors[0] != (fieldErr{"photo", x.field}) {
						t.Errorf("%s upload, %s send: %d %s", x.key, send, a.status, a.body)
					}
				}
				if _, found, err := h.Server.Journal.Lookup(context.Background(), "exam", x.key); err != nil || !found {
					t.Errorf("%s upload: not journaled (%v)", x.key, err)
				}
			}
			pc := powClient{t: t, url: h.URL}
			sol := pc.solve("pow")
			for _, x := range []struct {
				form, key string
				status    int
				code      string
			}{
				{"pow", "p1", 201, "stored"},
				{"pow", "p2", 403, "challenge-invalid"},
				{"keep", "k1", 201, "stored"},
				{"keep", "k2", 201, "received"},
			} {
				s := sol
				if x.form == "keep" {
					if x.key == "k1" {
						sol = pc.solve("keep")
					}
					s = sol
				}
				got, code := pc.submit(x.form, x.key, "Cy", s)
				if got != x.status || code != x.code {
					t.Errorf("%s/%s: %d %s, want %d %s", x.form, x.key, got, code, x.status, x.code)
				}
			}
			if r, err := h.Server.Store.SpamReason(context.Background(), "keep", "k2"); err != nil || r != "challenge-replayed" {
				t.Errorf("the replay's spam reason: %q %v", r, err)
			}
		})
	}
}

// powClient gets and solves a form's challenges and submits with them.
type powClient struct {
	t   *testing.T
	url string
}

func (c powClient) solve(form string) string {
	c.t.Helper()
	res, err := servertest.Client().Get(c.url + "/v1/forms/" + form + "/challenge")
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var ch challenge.Challenge
	if err := json.NewDecoder(res.Body).Decode(&ch); err != nil {
		c.t.Fatalf("challenge: %d %v", res.StatusCode, err)
	}
	p, ok := challenge.Solve(ch)
	if !ok {
		c.t.Fatal("not solved")
	}
	return challenge.Encode(p)
}

// submit posts name and the solution under key; it returns the status
// and the problem code or the status document's status.
func (c powClient) submit(form, key, name, solution string) (int, string) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "altcha": solution})
	req, _ := http.NewRequest("POST", c.url+"/v1/forms/"+form+"/submissions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := servertest.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct{ Code, Status string }
	json.NewDecoder(res.Body).Decode(&doc) //nolint:errcheck // checked by the caller
	if doc.Code != "" {
		return res.StatusCode, doc.Code
	}
	return res.StatusCode, doc.Status
}

// A file form while the store cannot decide: the submission naming a
// complete upload and the one naming a claimed upload are both journaled
// and answered 202; once the store is back the status URL says stored
// for the first and upload-used for the second, and a retry gets the
// decided answer.
func TestFileFormWhileTheStoreIsDown(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	h := servertest.Start(t, uploadForms, servertest.Options{
		Config: func(c *config.Config) {
			c.DecideAtAppend = false
			c.DefaultWait = 200 * time.Millisecond
		},
		WrapStore: servertest.StoreDownWhile(&down),
	})
	used := upload(t, h, photoBytes(2000, 1))
	if a := submitWithPhoto(t, h, "holder", "Ann", used); a.status != 201 {
		t.Fatalf("the first submission: %d %s", a.status, a.body)
	}
	fresh := upload(t, h, photoBytes(2000, 2))
	down.Store(true)
	for key, id := range map[string]string{"fresh": fresh, "second": used} {
		if a := submitWithPhoto(t, h, key, "Bo", id); a.status != 202 {
			t.Fatalf("%s while the store is down: %d %s", key, a.status, a.body)
		}
	}
	down.Store(false)
	status := func(key string) string {
		res, err := servertest.Client().Get(h.URL + "/v1/forms/exam/submissions/" + key)
		if err != nil {
			return err.Error()
		}
		defer res.Body.Close()
		var doc struct{ Status string }
		json.NewDecoder(res.Body).Decode(&doc) //nolint:errcheck // an empty status fails the poll
		return doc.Status
	}
	poll.Until(t, "both decided once the store is back", 10*time.Second, func() bool {
		return status("fresh") == "stored" && status("second") == "upload-used"
	})
	if a := submitWithPhoto(t, h, "second", "Bo", used); a.status != 422 || a.code != "upload-already-used" || a.replay != "true" {
		t.Fatalf("a retry of the refused key: %d %s %q", a.status, a.body, a.replay)
	}
}
