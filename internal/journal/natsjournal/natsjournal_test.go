package natsjournal

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/natsjournal/natstest"
	"github.com/formd/formd/internal/poll"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	natstest.AnnounceSkip("the journal conformance suite against a running NATS server (the in-process one still runs)")
	goleak.VerifyTestMain(m,
		// The in-process nats-server keeps a few process-wide goroutines.
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).startGoRoutine.func1"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*stree).Insert"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.init.0.func1"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).expireMsgsOnRecover"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*Server).lameDuckMode"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*flushWriter).run"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.newDirectory.func1"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).syncBlocks"),
	)
}

// openAt returns an opener of the conformance suite against the server at
// url: each test gets a stream of its own, deleted at the end.
func openAt(url string, opts Options) journaltest.Opener {
	return func(t *testing.T) func() journal.Journal {
		name := natstest.Stream(t, url, "T")
		return func() journal.Journal {
			o := opts
			o.URL, o.Stream = url, name
			j, err := Open(context.Background(), o)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return j
		}
	}
}

// The suite runs on an in-process server always, and on the external one
// when FORMD_TEST_NATS_URL names it.
func TestConformance(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		s := natstest.Server(t, true)
		journaltest.Run(t, openAt(s.ClientURL(), Options{}))
	})
	t.Run("external", func(t *testing.T) {
		journaltest.Run(t, openAt(natstest.ExternalURL(t), Options{}))
	})
}

func testURL(t *testing.T) string {
	if url := natstest.URL(); url != "" {
		return url
	}
	return natstest.Server(t, true).ClientURL()
}

func open(t *testing.T, url string, opts Options) *Journal {
	t.Helper()
	opts.URL = url
	if opts.Stream == "" {
		opts.Stream = natstest.Stream(t, url, "T")
	}
	j, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return j
}

// After the duplicate window, the stream's one-message-per-subject rule
// still keeps (form, key) unique, and Append reports the first entry with
// its fingerprint.
func TestDedupOutlivesTheDuplicateWindow(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	j := open(t, url, Options{})
	defer j.Close()
	ctx := context.Background()
	first := journaltest.NewEntry("f", "k")
	body, err := encode(first)
	if err != nil {
		t.Fatal(err)
	}
	// Written without the Nats-Msg-Id Append uses: as if the window had
	// passed since.
	ack, err := j.js.Publish(ctx, j.subject(first.Form, first.Key), body)
	if err != nil {
		t.Fatal(err)
	}
	again := journaltest.NewEntry("f", "k")
	again.Fingerprint = sha256.Sum256([]byte("other content"))
	a, err := j.Append(ctx, again, true)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Duplicate || a.Entry.Seq != ack.Sequence || a.Entry.Fingerprint != first.Fingerprint {
		t.Fatalf("append = %+v, want the first entry (seq %d) as a duplicate", a, ack.Sequence)
	}
	if _, err := j.js.Publish(ctx, j.subject(first.Form, first.Key), body, jetstream.WithMsgID("x")); !hasCode(err, codeStoreFailed) {
		t.Fatalf("a second message on a key's subject = %v, want the per-subject limit (code %d)", err, codeStoreFailed)
	}
	// Append's own check, by its error code, whatever the Msg-Id.
	if _, err := j.js.Publish(ctx, j.subject(first.Form, first.Key), body, append(j.publishOpts(again), jetstream.WithMsgID("y"))...); !isKeyTaken(err) {
		t.Fatalf("an append of a journaled key past the window = %v, want code %d", err, jetstream.JSErrCodeStreamWrongLastSequence)
	}
}

// The site is not in the subject: a form moved to another site after its
// key was journaled (and the duplicate window passed) has its key still
// taken. An entry an earlier release wrote under the form's site holds
// its key too, for Append, Lookup and Read alike.
func TestSubjectsDoNotDependOnTheSite(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	j := open(t, url, Options{})
	defer j.Close()
	ctx := context.Background()
	moved := journaltest.NewEntry("moved", "k")
	moved.Site = "first-site"
	a, err := j.Append(ctx, moved, true)
	if err != nil {
		t.Fatal(err)
	}
	again := moved
	again.Site = "second-site"
	body, err := encode(again)
	if err != nil {
		t.Fatal(err)
	}
	// As Append would publish it once the window has passed (another Msg-Id).
	if _, err := j.js.Publish(ctx, j.subject(again.Form, again.Key), body, append(j.publishOpts(again), jetstream.WithMsgID("later"))...); !isKeyTaken(err) {
		t.Fatalf("the key again from the form's new site = %v, want it taken", err)
	}

	old := journaltest.NewEntry("old", "k")
	old.Site = "legacy-site"
	body, err = encode(old)
	if err != nil {
		t.Fatal(err)
	}
	legacy := j.prefix + "." + token(old.Site) + "." + token(old.Form) + "." + keyHash(old.Key)
	ack, err := j.js.Publish(ctx, legacy, body)
	if err != nil {
		t.Fatal(err)
	}
	retry := journaltest.NewEntry("old", "k")
	retry.Site = "legacy-site"
	retry.ID = "another-id"
	got, err := j.Append(ctx, retry, true)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Duplicate || got.Entry.Seq != ack.Sequence || got.Entry.ID != old.ID {
		t.Fatalf("append of a key an earlier release journaled = %+v, want its entry (seq %d) as a duplicate", got, ack.Sequence)
	}
	// Past the window too.
	if _, err := j.js.Publish(ctx, j.subject(retry.Form, retry.Key), body, append(j.publishOpts(retry), jetstream.WithMsgID("later"))...); !isKeyTaken(err) {
		t.Fatalf("the earlier release's key past the window = %v, want it taken", err)
	}
	if e, found, err := j.Lookup(ctx, "old", "k"); err != nil || !found || e.Seq != ack.Sequence {
		t.Fatalf("lookup = %+v, %v, %v; want the earlier release's entry", e, found, err)
	}
	var sites []string
	if err := j.Read(ctx, journal.Filter{Site: "legacy-site"}, func(e journal.Entry) error {
		sites = append(sites, e.Form)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(sites) != 1 || sites[0] != "old" {
		t.Fatalf("read by site = %q, want the earlier release's entry alone", sites)
	}
	var forms []uint64
	if err := j.Read(ctx, journal.Filter{Form: "moved"}, func(e journal.Entry) error {
		forms = append(forms, e.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(forms) != 1 || forms[0] != a.Entry.Seq {
		t.Fatalf("read by form = %v, want [%d]", forms, a.Entry.Seq)
	}
}

// An entry held by a live instance is not delivered to another, however
// long the processing takes; when the instance dies, another gets it after
// AckWait; when it closes, at once.
func TestLeases(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	opts := Options{AckWait: 300 * time.Millisecond, Stream: natstest.Stream(t, url, "T")}
	a, b := open(t, url, opts), open(t, url, opts)
	defer b.Close()
	ctx := context.Background()
	if _, err := a.Append(ctx, journaltest.NewEntry("f", "k"), true); err != nil {
		t.Fatal(err)
	}
	got := fetch(t, a, time.Second)
	if len(got) != 1 {
		t.Fatalf("a fetched %v", got)
	}
	// Five ack waits pass while a holds the entry.
	if more := fetch(t, b, 1500*time.Millisecond); len(more) != 0 {
		t.Fatalf("b was handed an entry a holds: %+v", more)
	}
	// a dies without a word: its connection drops, no nak.
	a.stop()
	a.bg.Wait()
	a.nc.Close()
	start := time.Now()
	again := fetch(t, b, 10*time.Second)
	if len(again) != 1 || again[0].Seq != got[0].Seq || again[0].Handouts != 2 {
		t.Fatalf("after a died, b fetched %+v", again)
	}
	t.Logf("redelivered %v after the holder died", time.Since(start))
	// b closes holding it: the next instance gets it without waiting.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := open(t, url, opts)
	defer c.Close()
	if last := fetch(t, c, 2*time.Second); len(last) != 1 || last[0].Seq != got[0].Seq {
		t.Fatalf("after b closed, c fetched %+v", last)
	}
	a.Close()
}

func fetch(t *testing.T, j *Journal, d time.Duration) []journal.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	got, err := j.Fetch(ctx, 10)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch: %v", err)
	}
	return got
}

// An entry delivered MaxDeliver times without a decision is handed to
// DeadLetter, once, through the captured advisory.
func TestMaxDeliverDeadLetters(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	var mu sync.Mutex
	var dead []journal.Entry
	var reasons []string
	j := open(t, url, Options{MaxDeliver: 2, AckWait: time.Second, DeadLetter: func(_ context.Context, e journal.Entry, reason string, attempts int) error {
		mu.Lock()
		defer mu.Unlock()
		dead = append(dead, e)
		reasons = append(reasons, fmt.Sprintf("%s (%d)", reason, attempts))
		return nil
	}})
	defer j.Close()
	ctx := context.Background()
	a, err := j.Append(ctx, journaltest.NewEntry("f", "poison"), true)
	if err != nil {
		t.Fatal(err)
	}
	// refuse takes whatever is delivered and hands it back undecided.
	refuse := func() {
		for _, e := range fetch(t, j, 200*time.Millisecond) {
			if err := j.Nak(ctx, e.Seq, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadLetters := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(dead)
	}
	poll.Until(t, "a dead letter after MaxDeliver deliveries", 20*time.Second, func() bool {
		refuse()
		return deadLetters() > 0
	})
	// Once: the count must stay at one over three of the entry's ack
	// waits, in which a further delivery of the entry (and so a second
	// advisory) would have been dead-lettered again.
	poll.Holds(t, "exactly one dead letter", 3*time.Second, func() bool {
		refuse()
		return deadLetters() == 1
	})
	mu.Lock()
	defer mu.Unlock()
	if len(dead) != 1 || dead[0].Seq != a.Entry.Seq || dead[0].Key != "poison" || !strings.Contains(reasons[0], "MaxDeliver") {
		t.Fatalf("dead letters %+v %v", dead, reasons)
	}
}

// Publish failures map to the errors intake answers 503 for: unavailable
// when no server answers, overloaded when too many appends wait.
func TestPublishErrors(t *testing.T) {
	t.Parallel()
	s := natstest.Server(t, true)
	j := open(t, s.ClientURL(), Options{QueueSize: 1, PublishTimeout: 700 * time.Millisecond})
	defer j.Close()
	s.Shutdown()
	s.WaitForShutdown()
	done := make(chan error, 1)
	go func() {
		_, err := j.Append(context.Background(), journaltest.NewEntry("f", "a"), true)
		done <- err
	}()
	poll.Until(t, "the first append to take the queue's one slot", 5*time.Second, func() bool { return len(j.slots) > 0 })
	if _, err := j.Append(context.Background(), journaltest.NewEntry("f", "b"), true); !errors.Is(err, journal.ErrOverloaded) {
		t.Fatalf("append with the queue full = %v, want ErrOverloaded", err)
	}
	if err := <-done; !errors.Is(err, journal.ErrUnavailable) {
		t.Fatalf("append with the server down = %v, want ErrUnavailable", err)
	}
}

// Open reads the servers' fsync setting and the stream's replicas and
// reports what is lax.
func TestDurabilityCheck(t *testing.T) {
	t.Parallel()
	for _, syncAlways := range []bool{false, true} {
		t.Run(fmt.Sprint("sync_always=", syncAlways), func(t *testing.T) {
			t.Parallel()
			opts := &server.Options{Host: "127.0.0.1", Port: -1, HTTPHost: "127.0.0.1", HTTPPort: -1, JetStream: true,
				StoreDir: t.TempDir(), SyncAlways: syncAlways, NoLog: true, NoSigs: true}
			s, err := server.NewServer(opts)
			if err != nil {
				t.Fatal(err)
			}
			go s.Start()
			if !s.ReadyForConnections(10 * time.Second) {
				t.Fatal("server did not start")
			}
			defer func() { s.Shutdown(); s.WaitForShutdown() }()
			monitor := "http://" + s.MonitorAddr().String()
			if resp, err := http.Get(monitor + "/varz"); err == nil {
				resp.Body.Close()
			}
			j := open(t, s.ClientURL(), Options{MonitorURLs: []string{monitor}})
			defer j.Close()
			d := j.Durability()
			lax := strings.Join(d.Lax, "; ")
			if d.Replicas != 1 || !strings.Contains(lax, "1 replica") || !d.SyncKnown || d.SyncAlways != syncAlways ||
				strings.Contains(lax, "sync_interval: always") == syncAlways {
				t.Fatalf("durability %+v", d)
			}
		})
	}
}

// TestAttachChangesNothing: a tool that attaches (audit, replay, forget)
// uses the stream and consumer as serving instances made them, whatever
// its own settings say, and refuses a stream that is not there.
func TestAttachChangesNothing(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	served := open(t, url, Options{AckWait: 7 * time.Second, MaxDeliver: 9})
	defer served.Close()
	ctx := context.Background()
	if _, err := served.Append(ctx, journaltest.NewEntry("f", "k"), true); err != nil {
		t.Fatal(err)
	}
	tool, err := Open(ctx, Options{URL: url, Stream: served.opts.Stream, AckWait: time.Minute, MaxDeliver: 2, Attach: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := tool.Lookup(ctx, "f", "k"); err != nil || !found {
		t.Fatalf("the attached tool reads the journal: %v %v", found, err)
	}
	tool.Close()
	info, err := served.cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.AckWait != 7*time.Second || info.Config.MaxDeliver != 9 {
		t.Fatalf("attaching changed the consumer: ack wait %v, max deliver %d", info.Config.AckWait, info.Config.MaxDeliver)
	}
	if _, err := Open(ctx, Options{URL: url, Stream: natstest.Name("NONE"), Attach: true}); err == nil || !strings.Contains(err.Error(), "start formd serve") {
		t.Fatalf("attaching to no stream: %v", err)
	}
}

// The waiting instance an entry names comes back with it, from Lookup and
// from Fetch, so that the instance deciding it announces to that one.
func TestEntriesKeepTheirWaiter(t *testing.T) {
	t.Parallel()
	j := open(t, testURL(t), Options{})
	defer j.Close()
	ctx := context.Background()
	e := journaltest.NewEntry("f", "waited-for")
	e.Waiter = "instance-a"
	if _, err := j.Append(ctx, e, true); err != nil {
		t.Fatal(err)
	}
	if got, found, err := j.Lookup(ctx, e.Form, e.Key); err != nil || !found || got.Waiter != "instance-a" {
		t.Fatalf("lookup = %+v, %v, %v; want the waiter instance-a", got, found, err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got, err := j.Fetch(fctx, 10)
	if err != nil || len(got) != 1 || got[0].Waiter != "instance-a" {
		t.Fatalf("fetch = %+v, %v; want the entry with its waiter", got, err)
	}
	if err := j.Ack(ctx, got[0].Seq); err != nil {
		t.Fatal(err)
	}
}
