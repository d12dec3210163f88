package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outcomesSubjects is where a deployment's instances announce outcomes:
// <prefix>_outcomes.<instance>, the prefix its stream's name in lower case.
func outcomesSubjects(stream string) string { return strings.ToLower(stream) + "_outcomes.>" }

// announcements records, from every instance's outcomes subject, which
// subjects each key was announced on.
type announcements struct {
	mu   sync.Mutex
	subj map[string]map[string]bool // key -> subjects
}

func listen(t *testing.T, natsURL, stream string) *announcements {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	a := &announcements{subj: map[string]map[string]bool{}}
	if _, err := nc.Subscribe(outcomesSubjects(stream), func(m *nats.Msg) {
		var outs []struct{ Key string }
		if err := json.Unmarshal(m.Data, &outs); err != nil {
			t.Errorf("announcement on %s: %v", m.Subject, err)
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, o := range outs {
			if a.subj[o.Key] == nil {
				a.subj[o.Key] = map[string]bool{}
			}
			a.subj[o.Key][m.Subject] = true
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return a
}

// subjectsOf is every subject the keys with prefix were announced on, and
// how many of those keys were announced.
func (a *announcements) subjectsOf(prefix string) (map[string]bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	subjects, n := map[string]bool{}, 0
	for key, ss := range a.subj {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		n++
		for s := range ss {
			subjects[s] = true
		}
	}
	return subjects, n
}

// final posts one submission with Prefer: wait until the instance answers
// with its outcome (200 or 201), retrying on network errors and 5xx; a 202
// (not decided within the wait) is a failure.
func final(ctx context.Context, base, key string, wait int) (int, string, error) {
	c := newClient(func() []string { return []string{base} }, &stats{})
	c.http.Timeout = time.Duration(wait+5) * time.Second
	c.wait = wait
	body := bodyOf(key)
	for {
		code, _, doc, _, err := c.post(ctx, base, key, body)
		switch {
		case ctx.Err() != nil:
			return 0, "", ctx.Err()
		case err != nil || code >= 500:
			sleep(ctx, 100*time.Millisecond)
			continue
		case code == http.StatusOK || code == http.StatusCreated:
			return code, doc, nil
		default:
			return code, doc, fmt.Errorf("%s: %d %s", key, code, doc)
		}
	}
}

// bodyOf is the submission final sends for key: one person a key.
func bodyOf(key string) []byte {
	return fmt.Appendf(nil, `{"name":"Person %s","email":"%s@example.org"}`, key, key)
}

// sendAll sends n submissions keyed prefix-i to base, 16 at a time, and
// fails t unless each gets its outcome.
func sendAll(t *testing.T, ctx context.Context, base, prefix string, n, wait int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, _, err := final(ctx, base, fmt.Sprintf("%s-%d", prefix, i), wait); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Three instances: a submission waiting on one is answered by it when
// another decides it, and the outcome is announced on the waiting
// instance's subject only, never on another instance's.
func TestOutcomesGoToTheWaitingInstance(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	d := newDeployment(t, nurl, storeURL, 10000)
	ins := []*instance{d.start(t, "formd-a"), d.start(t, "formd-b"), d.start(t, "formd-c")}
	heard := listen(t, nurl, d.stream)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 150
	sendAll(t, ctx, ins[0].url(), "on-a", n, 10)
	sendAll(t, ctx, ins[1].url(), "on-b", n, 10)

	// The deciders announce after they commit, and so possibly after the
	// waiting request was answered: wait for the announcements to settle.
	var onA, onB map[string]bool
	var announcedA, announcedB int
	poll.UntilNil(t, "announcements of outcomes decided on another instance than the waiting one", 30*time.Second, func() error {
		onA, announcedA = heard.subjectsOf("on-a-")
		onB, announcedB = heard.subjectsOf("on-b-")
		if announcedA == 0 || announcedB == 0 {
			return fmt.Errorf("%d of the keys waiting on a and %d of those on b announced", announcedA, announcedB)
		}
		return nil
	})
	t.Logf("announced: %d of %d waiting on a (on %v), %d of %d waiting on b (on %v)", announcedA, n, keys(onA), announcedB, n, keys(onB))
	if len(onA) != 1 || len(onB) != 1 {
		t.Fatalf("outcomes waited for on a went to %v, those on b to %v: want one subject each", keys(onA), keys(onB))
	}
	for s := range onA {
		if onB[s] {
			t.Fatalf("outcomes waited for on a and on b both went to %s", s)
		}
	}
	heard.mu.Lock()
	defer heard.mu.Unlock()
	for key, ss := range heard.subj {
		if len(ss) > 1 {
			t.Errorf("%s announced on %v", key, keys(ss))
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The instance holding waiting requests is killed while the database is
// cut off, so none of them is decided before: the clients' retries to the
// other instances get the outcomes (which nobody announces to them: the
// entries name the dead instance), through those instances' poll of the
// store.
func TestRetriesOfAKilledInstancesRequests(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	p, cuttable := proxyStore(t, storeURL)
	d := newDeployment(t, nurl, cuttable, 10000)
	ins := []*instance{d.start(t, "formd-a"), d.start(t, "formd-b"), d.start(t, "formd-c")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	p.setCut(true)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := newClient(func() []string { return []string{ins[0].url()} }, &stats{})
			c.http.Timeout = time.Minute
			c.wait = 30
			// Fails when a is killed: the request was waiting.
			key := fmt.Sprintf("dead-%d", i)
			_, _, _, _, _ = c.post(ctx, ins[0].url(), key, bodyOf(key))
		})
	}
	poll.UntilNil(t, "every submission journaled, waiting on a", 30*time.Second, func() error {
		got, err := streamMsgs(ctx, nurl, d.stream)
		if err == nil && got < n {
			err = fmt.Errorf("%d journaled", got)
		}
		return err
	})
	ins[0].kill9()
	wg.Wait()
	p.setCut(false)
	for i := range n {
		wg.Go(func() {
			base := ins[1+i%2].url()
			key := fmt.Sprintf("dead-%d", i)
			code, doc, err := final(ctx, base, key, 20)
			if err != nil {
				t.Errorf("retry of %s at %s: %v", key, base, err)
				return
			}
			if doc != "stored" {
				t.Errorf("retry of %s at %s: %d %s, want the stored outcome", key, base, code, doc)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		logTails(t, ins[1:])
	}
}

func streamMsgs(ctx context.Context, natsURL, stream string) (uint64, error) {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// NATS never delivers instance a's announcements (its user may not
// subscribe to the outcomes subjects): the outcomes of its requests
// decided on b come from a's poll of the store, within the wait.
func TestLostAnnouncementsArePolled(t *testing.T) {
	storeURL := pgtest.URL(t)
	d := newDeployment(t, "", storeURL, 10000)
	srv := natsWithDeafUser(t, outcomesSubjects(d.stream))
	base := srv.ClientURL()
	deaf, full := strings.Replace(base, "nats://", "nats://deaf:deaf@", 1), strings.Replace(base, "nats://", "nats://full:full@", 1)
	da, db := d, d
	da.journal, db.journal = deaf, full
	a := da.start(t, "formd-a")
	db.start(t, "formd-b")
	heard := listen(t, full, d.stream)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Five times the poll's longest period: a request that waited for an
	// announcement would fail.
	const n = 150
	sendAll(t, ctx, a.url(), "deaf", n, 5)
	poll.UntilNil(t, "an outcome of a's decided on b (announced, unheard by a)", 30*time.Second, func() error {
		if _, announced := heard.subjectsOf("deaf-"); announced == 0 {
			return fmt.Errorf("none of the %d announced", n)
		}
		return nil
	})
	_, announced := heard.subjectsOf("deaf-")
	t.Logf("%d of %d outcomes decided on b and announced to a, which cannot hear them; all answered", announced, n)
}

// natsWithDeafUser is a JetStream server in this process with two users,
// full:full and deaf:deaf; deaf may not subscribe to deny.
func natsWithDeafUser(t *testing.T, deny string) *server.Server {
	t.Helper()
	opts := &server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "full", Password: "full"},
			{Username: "deaf", Password: "deaf", Permissions: &server.Permissions{Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{deny}}}},
		},
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}
