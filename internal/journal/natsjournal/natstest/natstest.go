// Package natstest runs real NATS servers inside a test process, as
// nats-server's own tests do: a single JetStream server, or a cluster of
// them on loopback ports, each with its store under t.TempDir(). Tests that
// would rather use a server already running read its URL from
// FORMD_TEST_NATS_URL with URL.
package natstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EnvURL names the environment variable of an external NATS server with
// JetStream enabled.
const EnvURL = "FORMD_TEST_NATS_URL"

// EnvRequire, set to 1, makes a missing or unreachable external server
// fail the tests that need it (ExternalURL) rather than skip them: a CI
// that is meant to run them must not pass because they skipped.
const EnvRequire = "FORMD_REQUIRE_SERVICES"

func required() bool { return os.Getenv(EnvRequire) == "1" }

// URL is the external server's URL, or "" when none is configured.
func URL() string { return os.Getenv(EnvURL) }

// announced is set once AnnounceSkip has said why the external suites
// skip, so that each skip need not say it again.
var announced atomic.Bool

// AnnounceSkip is for a package's TestMain: when EnvURL is unset, it
// prints one line saying that the suites against an external server
// (named by suites) are skipped and why, and ExternalURL then skips
// without repeating it. With EnvURL set it prints nothing.
func AnnounceSkip(suites string) {
	if URL() != "" || required() {
		return
	}
	announced.Store(true)
	fmt.Printf("skipping %s: %s is not set (see docs/development.md)\n", suites, EnvURL)
}

// ExternalURL is the external server's URL; it skips the test when none
// is configured (fails it under FORMD_REQUIRE_SERVICES=1), and fails it
// when the server does not answer.
func ExternalURL(t testing.TB) string {
	t.Helper()
	url := URL()
	if url == "" {
		if required() {
			t.Fatalf("%s=1 and %s is not set: this run must test against a running NATS server (such as nats://127.0.0.1:4222)", EnvRequire, EnvURL)
		}
		if announced.Load() {
			t.SkipNow()
		}
		t.Skipf("set %s to run this against a running NATS server", EnvURL)
	}
	reachable(t, url)
	return url
}

// reachable fails t when no server of url (comma-separated nats:// URLs)
// accepts a connection.
func reachable(t testing.TB, url string) {
	t.Helper()
	var last error
	for _, u := range strings.Split(url, ",") {
		host := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(u), "nats://"), "tls://")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		c, err := net.DialTimeout("tcp", host, 5*time.Second)
		if err == nil {
			c.Close()
			return
		}
		last = err
	}
	t.Fatalf("%s=%s: no NATS server answers (is it running?): %v", EnvURL, url, last)
}

// Name makes a stream name that no other test uses, so that tests can share
// one server, and run again on a server that kept an earlier run's streams.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return strings.ToUpper(prefix) + "_" + strings.ToUpper(hex.EncodeToString(b))
}

// Stream is a Name for a stream on the server at url, deleted when t ends
// with the dead-letter stream natsjournal keeps beside it, so that a
// server that outlives the tests does not keep every run's streams.
func Stream(t testing.TB, url, prefix string) string {
	name := Name(prefix)
	t.Cleanup(func() { deleteStreams(url, name) })
	return name
}

func deleteStreams(url, name string) {
	nc, err := nats.Connect(url)
	if err != nil {
		return // the server is gone with the test
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = js.DeleteStream(ctx, name)
	_ = js.DeleteStream(ctx, name+"_MAX_DELIVERIES")
}

// Server starts one JetStream server on a free loopback port; it is shut
// down when the test ends. syncAlways sets sync_interval: always.
func Server(t testing.TB, syncAlways bool) *server.Server {
	t.Helper()
	opts := &server.Options{
		ServerName: "formd-test",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		SyncAlways: syncAlways,
		NoLog:      true,
		NoSigs:     true,
	}
	return start(t, opts)
}

func start(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	// FORMD_TEST_NATS_LOG=1 shows the servers' own logs, for debugging.
	opts.NoLog = os.Getenv("FORMD_TEST_NATS_LOG") == ""
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	if !opts.NoLog {
		s.ConfigureLogger()
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		t.Fatal("nats server did not start")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Cluster is a JetStream cluster of servers on loopback ports.
type Cluster struct {
	t       testing.TB
	opts    []*server.Options
	Servers []*server.Server
}

// NewCluster starts n clustered JetStream servers with sync_interval:
// always and waits until they have a meta leader.
func NewCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	clientPorts, routePorts := freePorts(t, n), freePorts(t, n)
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	c := &Cluster{t: t}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("formd-n%d", i+1),
			Host:       "127.0.0.1",
			Port:       clientPorts[i],
			HTTPHost:   "127.0.0.1",
			HTTPPort:   -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			SyncAlways: true,
			NoLog:      true,
			NoSigs:     true,
			Cluster: server.ClusterOpts{
				Name: "formd-test",
				Host: "127.0.0.1",
				Port: routePorts[i],
			},
		}
		o.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		c.opts = append(c.opts, o)
		c.Servers = append(c.Servers, start(t, o))
	}
	c.WaitForLeader(30 * time.Second)
	return c
}

// URLs lists the client URLs of every server, comma-separated, as a
// client given all of them reconnects to the survivors.
func (c *Cluster) URLs() string {
	var urls []string
	for _, o := range c.opts {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(urls, ",")
}

// MonitorURLs lists the servers' HTTP monitoring URLs, for formd's
// durability check.
func (c *Cluster) MonitorURLs() string {
	var urls []string
	for _, s := range c.Servers {
		if a := s.MonitorAddr(); a != nil {
			urls = append(urls, "http://"+a.String())
		}
	}
	return strings.Join(urls, ",")
}

// Index returns the position of the server named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	return -1
}

// WaitForLeader polls until some running server is the JetStream meta
// leader.
func (c *Cluster) WaitForLeader(timeout time.Duration) {
	c.t.Helper()
	poll.Until(c.t, "the nats cluster to elect a meta leader", timeout, func() bool {
		for _, s := range c.Servers {
			if s.Running() && s.JetStreamIsLeader() {
				return true
			}
		}
		return false
	})
}

// Kill shuts server i down, as a crash of that node.
func (c *Cluster) Kill(i int) {
	c.Servers[i].Shutdown()
	c.Servers[i].WaitForShutdown()
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
