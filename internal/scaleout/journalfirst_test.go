package scaleout

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
)

// journalFirstForms are a proof-of-work form and a file form (issue 28).
const journalFirstForms = `id: pow
site: loadtest
fields: [{name: name, type: text, required: true}]
spam: {challenge: pow, difficulty: 1000}
---
id: files
site: loadtest
fields:
  - {name: name, type: text, required: true}
  - {name: scan, type: file, required: true, max_size: 1MiB, accept: [application/pdf]}
`

// solveAt gets a challenge of the form from base and solves it.
func solveAt(t *testing.T, base, form string) string {
	t.Helper()
	res, err := http.Get(base + "/v1/forms/" + form + "/challenge")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ch challenge.Challenge
	if err := json.NewDecoder(res.Body).Decode(&ch); err != nil {
		t.Fatalf("challenge: %d %v", res.StatusCode, err)
	}
	p, ok := challenge.Solve(ch)
	if !ok {
		t.Fatal("not solved")
	}
	return challenge.Encode(p)
}

// postJSON submits data under key, waiting a second for the outcome; it
// returns the status and the status document's status or problem code.
func postJSON(ctx context.Context, base, form, key string, data map[string]any) (int, string, error) {
	body, _ := json.Marshal(data)
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/forms/"+form+"/submissions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Prefer", "wait=1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc struct{ Status, Code string }
	_ = json.Unmarshal(b, &doc)
	return res.StatusCode, doc.Status + doc.Code, nil
}

// With PostgreSQL cut off under three NATS + PostgreSQL instances, a
// proof-of-work form and a file form answer every new submission 2xx —
// none 503: intake calls no store before the journal (DESIGN invariant
// 12) — and once the database is back every acknowledged one is stored
// exactly once, with its file; of a solution sent under two keys during
// the outage, the first decided holds it and the other is
// challenge-invalid.
func TestStoreOutageProofOfWorkAndFiles(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	p, cuttable := proxyStore(t, storeURL)
	d := newDeploymentOf(t, nurl, cuttable, journalFirstForms)
	ins := []*instance{d.start(t, "formd-1"), d.start(t, "formd-2"), d.start(t, "formd-3")}

	// Before the outage: the files are uploaded (an upload is recorded in
	// the store) and the challenges solved.
	const each = 4
	type sub struct {
		in        *instance
		form, key string
		data      map[string]any
		sum       [32]byte
	}
	var subs []sub
	for i, in := range ins {
		for n := range each {
			body := pdf(20<<10+n, byte(i*each+n))
			loc := tusUpload(t, in.url(), "files", body, 8<<10)
			id := loc[strings.LastIndexByte(loc, '/')+1:]
			subs = append(subs, sub{in: in, form: "files", key: fmt.Sprintf("file-%d-%d", i, n),
				data: map[string]any{"name": "Li", "scan": "upload:" + id}, sum: sha256.Sum256(body)})
			subs = append(subs, sub{in: in, form: "pow", key: fmt.Sprintf("pow-%d-%d", i, n),
				data: map[string]any{"name": "Li", "altcha": solveAt(t, in.url(), "pow")}})
		}
	}
	replayed := sub{in: ins[2], form: "pow", key: "pow-replayed", data: map[string]any{"name": "Bo", "altcha": subs[1].data["altcha"]}}
	// Plain HTML posts that carry their files (multipart/form-data): the
	// bytes are kept and the upload recorded by the decision.
	var plain []sub
	for i, in := range ins {
		for n := range each {
			body := pdf(30<<10+n, byte(100+i*each+n))
			plain = append(plain, sub{in: in, form: "files", key: fmt.Sprintf("plain-%d-%d", i, n),
				data: map[string]any{"name": "Wu", "scan": body}, sum: sha256.Sum256(body)})
		}
	}

	p.setCut(true)
	t.Log("database cut off")
	cutAt := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		status int
		what   string
		err    error
	}
	sent := append(append(append([]sub{}, subs...), replayed), plain...)
	results := make([]result, len(sent))
	var wg sync.WaitGroup
	for i, s := range sent {
		wg.Go(func() {
			var st int
			var what string
			var err error
			if _, isFile := s.data["scan"].([]byte); isFile {
				st, what, err = postMultipart(ctx, s.in.url(), s.form, s.key, s.data)
			} else {
				st, what, err = postJSON(ctx, s.in.url(), s.form, s.key, s.data)
			}
			results[i] = result{st, what, err}
		})
	}
	wg.Wait()
	answered := time.Since(cutAt)
	// The outage lasts past the answers (storeCut), so that the
	// processors meet a database that is still gone.
	sleep(ctx, time.Until(cutAt.Add(storeCut(t))))
	p.setCut(false)
	t.Logf("database back after %v; every submission answered within %v of the cut", time.Since(cutAt).Round(time.Millisecond), answered.Round(time.Millisecond))
	for i, r := range results {
		// 2xx, or a plain post's 303 to its page.
		if r.err != nil || (r.status < 200 || r.status > 299) && r.status != http.StatusSeeOther {
			t.Errorf("%s during the outage: %d %s %v", sent[i].key, r.status, r.what, r.err)
		}
	}
	if t.Failed() {
		logTails(t, ins)
		t.FailNow()
	}

	// Once the database is back: each is decided, stored once, each file
	// claimed by its entry with the bytes sent.
	type row struct {
		status string
		n      int
		sha    string
	}
	read := func() (map[string]row, error) {
		conn, err := pgx.Connect(ctx, storeURL)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT e.key, e.status, count(*) OVER (PARTITION BY e.form, e.key),
				coalesce((SELECT encode(up.sha256, 'hex') FROM upload_claims c JOIN uploads up ON up.id = c.upload_id WHERE c.entry_id = e.id), '')
			FROM entries e WHERE e.form IN ('pow', 'files')`)
		if err != nil {
			return nil, err
		}
		out := map[string]row{}
		for rows.Next() {
			var k string
			var r row
			if err := rows.Scan(&k, &r.status, &r.n, &r.sha); err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, rows.Err()
	}
	var got map[string]row
	poll.UntilNil(t, "every submission decided once the database is back", 60*time.Second, func() error {
		var err error
		if got, err = read(); err != nil {
			return err
		}
		if len(got) < len(sent) {
			return fmt.Errorf("%d of %d decided", len(got), len(sent))
		}
		return nil
	})
	// The replay and the submission it copies went in together: the first
	// decided holds the solution, the other is challenge-invalid.
	orig, rep := got[subs[1].key], got[replayed.key]
	if orig.status == "challenge-invalid" && rep.status == "stored" {
		t.Logf("the replay was decided first: %s is challenge-invalid", subs[1].key)
		orig.status, rep.status = rep.status, orig.status
		got[subs[1].key] = orig
	}
	if rep.status != "challenge-invalid" || rep.n != 1 {
		t.Errorf("of a solution sent under two keys: %s %+v and %s %+v, want one stored, one challenge-invalid", subs[1].key, got[subs[1].key], replayed.key, got[replayed.key])
	}
	for _, s := range append(subs, plain...) {
		r := got[s.key]
		want := row{status: "stored", n: 1}
		if s.form == "files" {
			want.sha = hex.EncodeToString(s.sum[:])
		}
		if r != want {
			t.Errorf("%s: %+v, want %+v", s.key, r, want)
		}
	}
	if t.Failed() {
		logTails(t, ins)
	}
}

// storeCut is how long the outage of TestStoreOutageProofOfWorkAndFiles
// lasts from the cut: FORMD_TEST_STORE_CUT (a Go duration; the issue's
// Done-when asks for 20s), by default 4s to keep go test ./... short.
func storeCut(t *testing.T) time.Duration {
	v := os.Getenv("FORMD_TEST_STORE_CUT")
	if v == "" {
		return 4 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("FORMD_TEST_STORE_CUT=%q: %v", v, err)
	}
	return d
}

// postMultipart sends a plain HTML post (multipart/form-data) with its
// key in _key and the []byte values as files, as a browser does: no
// Idempotency-Key header, and a redirect is not followed. It returns the
// status and the problem code, if any.
func postMultipart(ctx context.Context, base, form, key string, data map[string]any) (int, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("_key", key)
	for _, k := range slices.Sorted(maps.Keys(data)) {
		switch v := data[k].(type) {
		case []byte:
			fw, err := mw.CreateFormFile(k, k+".pdf")
			if err != nil {
				return 0, "", err
			}
			fw.Write(v) //nolint:errcheck // a bytes.Buffer
		default:
			_ = mw.WriteField(k, fmt.Sprint(v))
		}
	}
	mw.Close() //nolint:errcheck // a bytes.Buffer
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/forms/"+form+"/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var doc struct{ Code string }
	_ = json.Unmarshal(b, &doc)
	return res.StatusCode, doc.Code, nil
}
