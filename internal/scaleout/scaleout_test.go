package scaleout

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal/natsjournal/natstest"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMain(m *testing.M) {
	pgtest.AnnounceSkip("the scale-out suites (formd processes sharing PostgreSQL and NATS)")
	os.Exit(m.Run())
}

// natsURL is the external NATS server when FORMD_TEST_NATS_URL is set,
// else an in-process one.
func natsURL(t *testing.T) string {
	if u := natstest.URL(); u != "" {
		return u
	}
	return natstest.Server(t, true).ClientURL()
}

func urlsOf(ins []*instance) func() []string {
	return func() []string {
		out := make([]string, len(ins))
		for i, in := range ins {
			out[i] = in.url()
		}
		return out
	}
}

// Three instances share one NATS and one PostgreSQL; one is killed with
// SIGKILL a third of the way through the load and restarted. Every
// submission the clients had acknowledged is stored once; nobody is
// registered twice; no place is oversold.
func TestThreeInstancesSurviveKill9(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	const capacity = 150
	d := newDeployment(t, nurl, storeURL, capacity)
	// Started from the test's goroutine: a start that fails stops the test
	// there (t.Fatal), rather than leaving it with fewer instances.
	var ins []*instance
	for i := range 3 {
		ins = append(ins, d.start(t, fmt.Sprint("formd-", i+1)))
	}

	l := load{submissions: 1200, people: 800, clients: 24, doubleClick: 10}
	st := &stats{}
	c := newClient(urlsOf(ins), st)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var back time.Duration
	killed := st.faultAt(ctx, int64(l.submissions/3), func() {
		start := time.Now()
		ins[1].kill9()
		ins[1].run() // restart and wait until ready
		back = time.Since(start)
	})
	start := time.Now()
	answers := l.run(ctx, c, "k9")
	t.Logf("load: %d submissions in %v; %s", l.submissions, time.Since(start).Round(time.Millisecond), st)
	if !hasRun(killed) {
		t.Fatal("the load ended before an instance was killed")
	}
	t.Logf("instance 2 killed with SIGKILL at a third of the load and back after %v", back.Round(time.Millisecond))
	check(t, checker{storeURL: storeURL, natsURL: nurl, stream: d.stream, capacity: capacity}, answers, l.people)
	if t.Failed() {
		logTails(t, ins)
	}
}

// PostgreSQL is unreachable for 10 s in the middle of the load: the
// instances keep acknowledging from the journal (202), the backlog drains
// once the database is back, and nothing is lost.
func TestStoreOutage(t *testing.T) {
	storeURL := pgtest.URL(t)
	nurl := natsURL(t)
	p, cuttable := proxyStore(t, storeURL)
	const capacity = 100
	d := newDeployment(t, nurl, cuttable, capacity)
	ins := []*instance{d.start(t, "formd-1"), d.start(t, "formd-2")}

	l := load{submissions: 600, people: 450, clients: 16, doubleClick: 12}
	st := &stats{}
	c := newClient(urlsOf(ins), st)
	c.wait = 1
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var during atomic.Int64 // 202s answered while the database was cut off
	outage := st.faultAt(ctx, int64(l.submissions/4), func() {
		before := st.get(202)
		p.setCut(true)
		t.Log("database cut off")
		sleep(ctx, 10*time.Second)
		during.Store(st.get(202) - before)
		p.setCut(false)
		t.Log("database back")
	})
	start := time.Now()
	answers := l.run(ctx, c, "out")
	<-outage
	t.Logf("load: %d submissions in %v; %s; 202s during the outage: %d", l.submissions, time.Since(start).Round(time.Millisecond), st, during.Load())
	if during.Load() == 0 {
		t.Error("no submission was acknowledged (202) while the database was cut off")
	}
	check(t, checker{storeURL: storeURL, natsURL: nurl, stream: d.stream, capacity: capacity}, answers, l.people)
	if t.Failed() {
		logTails(t, ins)
	}
}

// A three-node JetStream cluster in this process holds the journal with
// three replicas; the node leading the stream is killed in the middle of
// the load. Nothing acknowledged is lost, and formd finds the durability
// settings strict (no warning).
func TestNATSClusterNodeLoss(t *testing.T) {
	storeURL := pgtest.URL(t)
	cl := natstest.NewCluster(t, 3)
	const capacity = 120
	d := newDeployment(t, cl.URLs(), storeURL, capacity, "--nats-replicas", "3", "--nats-monitor", cl.MonitorURLs())
	ins := []*instance{d.start(t, "formd-1"), d.start(t, "formd-2")}
	for _, in := range ins {
		if in.grepLog("DURABILITY IS LAX") {
			t.Errorf("%s warns of lax durability on 3 replicas with sync always:\n%s", in.name, in.tail())
		}
	}

	l := load{submissions: 600, people: 400, clients: 16, doubleClick: 10}
	st := &stats{}
	c := newClient(urlsOf(ins), st)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var node string
	killed := st.faultAt(ctx, int64(l.submissions/3), func() {
		leader := streamLeader(t, cl.URLs(), d.stream)
		i := cl.Index(leader)
		if i < 0 {
			i = 0
		}
		cl.Kill(i)
		node = fmt.Sprintf("%s (%s)", cl.Servers[i].Name(), leader)
	})
	start := time.Now()
	answers := l.run(ctx, c, "cl")
	t.Logf("load: %d submissions in %v; %s", l.submissions, time.Since(start).Round(time.Millisecond), st)
	if !hasRun(killed) {
		t.Fatal("the load ended before a node was killed")
	}
	t.Logf("killed the stream's leader node %s mid-run", node)
	// The client library skips the dead node among the URLs.
	check(t, checker{storeURL: storeURL, natsURL: cl.URLs(), stream: d.stream, capacity: capacity}, answers, l.people)
	if t.Failed() {
		logTails(t, ins)
	}
}

func streamLeader(t *testing.T, urls, stream string) string {
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Log(err)
		return ""
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Log(err)
		return ""
	}
	if ci := s.CachedInfo().Cluster; ci != nil {
		return ci.Leader
	}
	return ""
}
