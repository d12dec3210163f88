// Package scaleout tests formd as several instances: real formd processes
// on loopback ports sharing one NATS JetStream journal and one PostgreSQL
// store, under load from clients that speak the client protocol, while
// instances are killed, the database is cut off, or a NATS node dies. At
// the end a checker reads the store and the stream: nothing acknowledged
// is lost, nothing is doubled, nothing is oversold.
package scaleout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal/natsjournal/natstest"
	"github.com/formd/formd/internal/poll"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const formID = "scale"

// formYAML is the test form: one live entry per e-mail, a capacity with a
// waitlist.
func formYAML(capacity int) string {
	return fmt.Sprintf(`id: %s
site: loadtest
title: Scale-out test
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
unique: [[email]]
capacity: %d
when_full: waitlist
`, formID, capacity)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// formdBinary builds cmd/formd once for the package's tests.
func formdBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "formd-scaleout-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "formd")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/formd/formd/cmd/formd")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// givenPorts are the ports freePort has returned in this test binary. A
// port is closed between its choice and the instance's listen, and the
// kernel may offer a just-closed port again: two instances (or an
// instance's API and metrics) must not be given the same one.
var givenPorts sync.Map

func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if _, taken := givenPorts.LoadOrStore(port, true); !taken {
			return port
		}
	}
	t.Fatal("no port that was not given already")
	return 0
}

// instance is one formd process.
type instance struct {
	t    testing.TB
	bin  string // the formd binary; empty for this tree's
	name string
	args []string
	env  []string
	addr string
	log  string

	mu  sync.Mutex
	cmd *exec.Cmd
	out *os.File
}

// deployment is the settings every instance shares.
type deployment struct {
	journal, store, stream, forms string
	extra                         []string
	bin                           string // the formd binary; empty for this tree's
}

func newDeployment(t testing.TB, journalURL, storeURL string, capacity int, extra ...string) deployment {
	return newDeploymentOf(t, journalURL, storeURL, formYAML(capacity), extra...)
}

// newDeploymentOf is newDeployment with the forms given.
func newDeploymentOf(t testing.TB, journalURL, storeURL, formsYAML string, extra ...string) deployment {
	forms := filepath.Join(t.TempDir(), "forms.yaml")
	if err := os.WriteFile(forms, []byte(formsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return deployment{journal: journalURL, store: storeURL, stream: natstest.Stream(t, journalURL, "SCALE"), forms: forms, extra: extra}
}

// start runs a new instance of the deployment and waits until it is ready.
func (d deployment) start(t testing.TB, name string) *instance {
	t.Helper()
	dir := t.TempDir()
	in := &instance{
		t:    t,
		bin:  d.bin,
		name: name,
		addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		log:  filepath.Join(dir, name+".log"),
	}
	in.args = append([]string{"serve", "--data", filepath.Join(dir, "data"), "--forms", d.forms, "--rate-limit", "off",
		"--journal", d.journal, "--store", d.store, "--nats-stream", d.stream, "--nats-ack-wait", "2s",
		"--reconcile-every", "1s", "--forms-refresh", "200ms", "--log-format", "text", "--log-level", "warn"}, d.extra...)
	in.args = append(in.args, "--addr", in.addr)
	in.env = append(os.Environ(), "FORMD_CONFIG=")
	in.run()
	t.Cleanup(in.stop)
	return in
}

func (in *instance) run() {
	in.t.Helper()
	out, err := os.OpenFile(in.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		in.t.Fatal(err)
	}
	bin := in.bin
	if bin == "" {
		bin = formdBinary(in.t)
	}
	cmd := exec.Command(bin, in.args...)
	cmd.Env = in.env
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		in.t.Fatalf("start %s: %v", in.name, err)
	}
	in.mu.Lock()
	in.cmd, in.out = cmd, out
	in.mu.Unlock()
	in.waitReady(30 * time.Second)
}

func (in *instance) url() string { return "http://" + in.addr }

// dataDir is the instance's --data directory.
func (in *instance) dataDir() string {
	for i, a := range in.args {
		if a == "--data" {
			return in.args[i+1]
		}
	}
	return ""
}

func (in *instance) waitReady(timeout time.Duration) {
	in.t.Helper()
	ready := false
	defer func() {
		if !ready {
			in.t.Logf("%s log:\n%s", in.name, in.tail())
		}
	}()
	poll.UntilOK(in.t, in.name+" to answer /readyz", timeout, in.url()+"/readyz")
	ready = true
}

// kill9 ends the process at once, as a crash.
func (in *instance) kill9() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return
	}
	_ = in.cmd.Process.Signal(syscall.SIGKILL)
	_ = in.cmd.Wait()
	in.out.Close()
	in.cmd = nil
}

// stop ends the process gracefully (SIGTERM), or kills it after a while.
func (in *instance) stop() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cmd == nil {
		return
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = in.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = in.cmd.Process.Kill()
		<-done
	}
	in.out.Close()
	in.cmd = nil
}

func (in *instance) tail() string {
	b, _ := os.ReadFile(in.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// logTails logs the end of each instance's log, for a test that failed.
func logTails(t testing.TB, ins []*instance) {
	for _, in := range ins {
		t.Logf("%s log tail:\n%s", in.name, in.tail())
	}
}

// grepLog says whether the instance's log has a line containing s.
func (in *instance) grepLog(s string) bool {
	b, _ := os.ReadFile(in.log)
	return bytes.Contains(b, []byte(s))
}

// answer is what a client learnt for one submission.
type answer struct {
	key, email string
	// acked: the server gave a definitive answer (2xx or 409), so the
	// submission is journaled and must end up in the store.
	acked bool
	// status the client was told: stored, waitlisted, processing (202),
	// duplicate-entry, capacity-reached.
	status string
	// as is the key the answer's status document names when it is not
	// this one: a resend of a live entry's content is answered as that
	// entry.
	as string
	// first is when the first attempt started, done when the definitive
	// answer came.
	first, done time.Time
	attempts    int
}

// stats counts what the clients saw, for the tests' assertions.
type stats struct {
	byCode   sync.Map // int → *atomic.Int64
	netErrs  atomic.Int64
	statusQs atomic.Int64
	acked    atomic.Int64

	mu      sync.Mutex
	waiters []ackWaiter // closed once acked reaches n
}

type ackWaiter struct {
	n  int64
	ch chan struct{}
}

// ack counts an acknowledged submission and wakes those waiting for the
// count.
func (s *stats) ack() {
	n := s.acked.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if n >= w.n {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	s.waiters = kept
}

// ackedAtLeast is closed once n submissions are acknowledged: the signal
// for a fault injected partway through a load.
func (s *stats) ackedAtLeast(n int64) <-chan struct{} {
	ch := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acked.Load() >= n {
		close(ch)
	} else {
		s.waiters = append(s.waiters, ackWaiter{n, ch})
	}
	return ch
}

// faultAt runs fault in a goroutine once n submissions are
// acknowledged, unless ctx ends first. When that goroutine is done, the
// channel it returns gets whether fault ran.
func (s *stats) faultAt(ctx context.Context, n int64, fault func()) <-chan bool {
	done := make(chan bool, 1)
	go func() {
		select {
		case <-s.ackedAtLeast(n):
		case <-ctx.Done():
			done <- false
			return
		}
		fault()
		done <- true
	}()
	return done
}

// hasRun says, without waiting, whether the fault of a faultAt has run.
func hasRun(done <-chan bool) bool {
	select {
	case ran := <-done:
		return ran
	default:
		return false
	}
}

func (s *stats) count(code int) {
	v, _ := s.byCode.LoadOrStore(code, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (s *stats) get(code int) int64 {
	if v, ok := s.byCode.Load(code); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (s *stats) String() string {
	var parts []string
	s.byCode.Range(func(k, v any) bool {
		parts = append(parts, fmt.Sprintf("%d:%d", k.(int), v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(parts)
	return fmt.Sprintf("answers %s, network errors %d, status checks %d", strings.Join(parts, " "), s.netErrs.Load(), s.statusQs.Load())
}

// client speaks the client protocol: the same idempotency key until a
// definitive answer; retries on network errors, 5xx, 429 and 503 with
// exponential backoff and jitter, honouring Retry-After; after a timeout
// or a network error, it asks the status endpoint by key before sending
// again. It spreads its requests over every instance and moves to the next
// one when an instance fails.
type client struct {
	http      *http.Client
	instances func() []string
	wait      int // Prefer: wait=N; 0 sends Prefer: respond-async
	stats     *stats
}

func newClient(instances func() []string, st *stats) *client {
	return &client{
		http:      &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		instances: instances,
		wait:      2,
		stats:     st,
	}
}

type submission struct {
	key, name, email string
	// session is the option chosen on a form whose sessions have places
	// of their own ("" for none).
	session string
}

// submit sends one submission until it has a definitive answer or ctx ends.
func (c *client) submit(ctx context.Context, s submission) answer {
	a := answer{key: s.key, email: s.email, first: time.Now()}
	fields := map[string]string{"name": s.name, "email": s.email}
	if s.session != "" {
		fields["session"] = s.session
	}
	body, _ := json.Marshal(fields)
	backoff := 50 * time.Millisecond
	askFirst := false
	pick := rand.IntN(1 << 20)
	for ctx.Err() == nil {
		urls := c.instances()
		base := urls[(pick+a.attempts)%len(urls)]
		a.attempts++
		retryAfter := time.Duration(0)
		if askFirst {
			c.stats.statusQs.Add(1)
			code, doc, docKey, err := c.status(ctx, base, s.key)
			switch {
			case err != nil:
				c.stats.netErrs.Add(1)
			case code == http.StatusOK:
				a.acked, a.status, a.done = true, doc, time.Now()
				a.as = otherKey(docKey, s.key)
				c.stats.ack()
				return a
			case code == http.StatusNotFound:
				askFirst = false
				continue // not journaled: send it again, same key
			}
			sleep(ctx, jitter(backoff))
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		code, hdr, doc, docKey, err := c.post(ctx, base, s.key, body)
		if err != nil {
			// The request may or may not have been journaled.
			c.stats.netErrs.Add(1)
			askFirst = true
			sleep(ctx, jitter(backoff))
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		c.stats.count(code)
		switch {
		case code == http.StatusCreated || code == http.StatusOK || code == http.StatusAccepted || code == http.StatusConflict:
			a.acked, a.status, a.done = true, doc, time.Now()
			a.as = otherKey(docKey, s.key)
			c.stats.ack()
			return a
		case code == http.StatusTooManyRequests || code >= 500:
			if n, err := strconv.Atoi(hdr.Get("Retry-After")); err == nil {
				retryAfter = time.Duration(n) * time.Second
			}
			sleep(ctx, max(retryAfter, jitter(backoff)))
			backoff = min(backoff*2, 2*time.Second)
		default:
			a.status = fmt.Sprintf("unexpected %d from %s: %s", code, base, doc)
			a.done = time.Now()
			return a
		}
	}
	return a
}

// otherKey is docKey when it names another key than key, else "".
func otherKey(docKey, key string) string {
	if docKey == key {
		return ""
	}
	return docKey
}

func (c *client) post(ctx context.Context, base, key string, body []byte) (int, http.Header, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/forms/"+formID+"/submissions", bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if c.wait > 0 {
		req.Header.Set("Prefer", fmt.Sprintf("wait=%d", c.wait))
	} else {
		req.Header.Set("Prefer", "respond-async")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, "", "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, "", "", err
	}
	var doc struct {
		Status string `json:"status"`
		Code   string `json:"code"`
		Key    string `json:"key"`
	}
	_ = json.Unmarshal(raw, &doc)
	s := doc.Status
	if s == "" {
		s = doc.Code
	}
	if s == "" {
		s = string(raw)
	}
	return resp.StatusCode, resp.Header, s, doc.Key, nil
}

func (c *client) status(ctx context.Context, base, key string) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/forms/"+formID+"/submissions/"+key, nil)
	if err != nil {
		return 0, "", "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	var doc struct {
		Status string `json:"status"`
		Key    string `json:"key"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc.Status, doc.Key, nil
}

func jitter(d time.Duration) time.Duration { return d/2 + time.Duration(rand.Int64N(int64(d/2)+1)) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// load is a run of many clients.
type load struct {
	submissions int
	people      int // distinct e-mails; fewer than submissions makes duplicates
	clients     int
	// doubleClick sends every n-th submission twice at once, same key.
	doubleClick int
	// sessions, when set, has person p choose session s(p mod sessions + 1).
	sessions int
}

// run sends the load through the instances and returns every answer. Each
// submission's key is prefix-i; person i%people.
func (l load) run(ctx context.Context, c *client, prefix string) []answer {
	jobs := make(chan int)
	out := make([]answer, l.submissions)
	var wg sync.WaitGroup
	for range l.clients {
		wg.Go(func() {
			for i := range jobs {
				p := i % l.people
				s := submission{key: fmt.Sprintf("%s-%d", prefix, i), name: fmt.Sprintf("Person %d", p), email: fmt.Sprintf("p%d@example.org", p)}
				if l.sessions > 0 {
					s.session = fmt.Sprint("s", p%l.sessions+1)
				}
				if l.doubleClick > 0 && i%l.doubleClick == 0 {
					var twin answer
					var inner sync.WaitGroup
					inner.Go(func() { twin = c.submit(ctx, s) })
					out[i] = c.submit(ctx, s)
					inner.Wait()
					if !out[i].acked {
						out[i] = twin
					}
					continue
				}
				out[i] = c.submit(ctx, s)
			}
		})
	}
	for i := range l.submissions {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// checker reads the truth from the store and the stream.
type checker struct {
	storeURL, natsURL, stream string
	capacity                  int
}

type storeRow struct {
	status, email string
}

// drain waits until every journal entry has its outcome in the store and
// the consumer has nothing left, and returns the store's entries by key.
func (ck checker) drain(t testing.TB, timeout time.Duration) map[string]storeRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := nats.Connect(ck.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var last string
	for {
		rows, err := ck.rows(ctx)
		if err == nil {
			var msgs uint64
			var backlog int
			st, serr := js.Stream(ctx, ck.stream)
			if serr == nil {
				si, ierr := st.Info(ctx)
				ci, cerr := js.Consumer(ctx, ck.stream, "processor")
				if ierr == nil && cerr == nil {
					info, _ := ci.Info(ctx)
					msgs = si.State.Msgs
					if info != nil {
						backlog = int(info.NumPending) + info.NumAckPending
					}
				}
			}
			if uint64(len(rows)) == msgs && backlog == 0 && msgs > 0 {
				return rows
			}
			last = fmt.Sprintf("store has %d entries, journal %d, backlog %d", len(rows), msgs, backlog)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the backlog did not drain in %v: %s", timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (ck checker) rows(ctx context.Context) (map[string]storeRow, error) {
	conn, err := pgx.Connect(ctx, ck.storeURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT key, status, convert_from(data, 'UTF8')::json->>'email' FROM entries WHERE form = $1`, formID)
	if err != nil {
		return nil, err
	}
	out := map[string]storeRow{}
	for rows.Next() {
		var k string
		var r storeRow
		if err := rows.Scan(&k, &r.status, &r.email); err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, rows.Err()
}

// verify checks the run: every acknowledged submission is stored once (0
// lost), each person is live at most once (0 duplicated), places are not
// oversold, and what clients were told matches the store.
// check waits for ck's store to decide the journal, then verifies the
// answers against what it stored.
func check(t testing.TB, ck checker, answers []answer, people int) {
	t.Helper()
	ck.verify(t, answers, ck.drain(t, 60*time.Second), people)
}

func (ck checker) verify(t testing.TB, answers []answer, rows map[string]storeRow, people int) {
	t.Helper()
	var lost, unanswered, mismatched []string
	liveOf := map[string]string{} // email → status of the person's live entry
	for _, r := range rows {
		if r.status == "stored" || r.status == "waitlisted" {
			liveOf[r.email] = r.status
		}
	}
	for _, a := range answers {
		if !a.acked {
			unanswered = append(unanswered, a.key+" ("+a.status+")")
			continue
		}
		r, ok := rows[a.key]
		if !ok {
			lost = append(lost, a.key)
			continue
		}
		if a.as != "" {
			// A resend answered as the entry it repeats: that entry is
			// what the client was told about.
			if r, ok = rows[a.as]; !ok {
				lost = append(lost, a.key+" (answered as "+a.as+")")
				continue
			}
		}
		told := map[string]string{"duplicate-entry": "duplicate", "capacity-reached": "rejected"}[a.status]
		if told == "" {
			told = a.status
		}
		if a.as == "" && r.status == "duplicate" && (told == "stored" || told == "waitlisted") {
			// A resend answered under its own key with the outcome of the
			// entry holding the place (the server never names that
			// entry's key): the person's live entry is what it was told
			// about.
			if liveOf[a.email] == "" {
				lost = append(lost, a.key+" (a resend, the person has no live entry)")
			}
			continue
		}
		if told != "processing" && told != r.status {
			mismatched = append(mismatched, fmt.Sprintf("%s told %s, store has %s", a.key, a.status, r.status))
		}
	}
	live := map[string]int{}
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.status]++
		if r.status == "stored" || r.status == "waitlisted" {
			live[r.email]++
		}
	}
	var doubled []string
	for email, n := range live {
		if n > 1 {
			doubled = append(doubled, fmt.Sprintf("%s live %d times", email, n))
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ck.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var taken int
	if err := conn.QueryRow(ctx, `SELECT taken FROM capacity WHERE form = $1`, formID).Scan(&taken); err != nil {
		t.Fatal(err)
	}
	t.Logf("store: %v; capacity taken %d of %d", counts, taken, ck.capacity)
	if len(lost) > 0 || len(unanswered) > 0 || len(mismatched) > 0 || len(doubled) > 0 {
		t.Errorf("lost %d %v\nunanswered %d %v\nmismatched %d %v\nduplicated %d %v", len(lost), head(lost), len(unanswered), head(unanswered),
			len(mismatched), head(mismatched), len(doubled), head(doubled))
	}
	if counts["stored"] > ck.capacity || taken != counts["stored"] {
		t.Errorf("oversold: %d stored, taken %d, capacity %d", counts["stored"], taken, ck.capacity)
	}
	if want := min(people, ck.capacity); counts["stored"] != want || counts["waitlisted"] != people-want {
		t.Errorf("%d people: want %d stored and %d waitlisted, store has %v", people, want, people-want, counts)
	}
}

func head(s []string) []string {
	sort.Strings(s)
	return s[:min(len(s), 10)]
}

// proxy is a loopback TCP proxy that the test can cut: while cut, it
// closes every connection at once, as an unreachable database.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// proxyStore puts a proxy in front of the database at storeURL and
// returns it with the URL that reaches the database through it.
func proxyStore(t testing.TB, storeURL string) (*proxy, string) {
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.addr()
	return p, u.String()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut cuts the database off (closing every connection) or lets it
// through again.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}
