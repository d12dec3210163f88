package loadtest_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/loadtest"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store"
	"go.uber.org/goleak"
)

// helperEnv makes this test binary act as `formd serve`, so that the
// spawn and kill -9 path runs against a real formd server process
// without building the formd binary.
const helperEnv = "FORMD_LOADTEST_TEST_SERVE"

// crashEnv makes the helper server stop by itself after a while.
const crashEnv = "FORMD_LOADTEST_TEST_STOP_AFTER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(serveForTest(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// serveForTest is `formd serve` (cmd/formd/serve.go) in miniature: the
// same settings, the same first-start token line, the same shutdown.
func serveForTest(args []string) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintln(os.Stderr, "test helper: want serve")
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	loader := config.NewLoader(fs, os.Getenv)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := loader.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.Open(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if s.NewAdminToken != "" {
		fmt.Fprintf(os.Stderr, "formd: this is the admin token:\n\n    %s\n\n", s.NewAdminToken)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.Close()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if d, err := time.ParseDuration(os.Getenv(crashEnv)); err == nil {
		// Stands in for a server that dies on its own, some time after
		// it started listening.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if err := s.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func requirePass(t *testing.T, rep *loadtest.Report) {
	t.Helper()
	if !rep.OK || rep.Verdict == nil {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("the run did not pass:\n%s", b.String())
	}
}

// A small run with every kind of person and every network fault, against
// an in-process server: it passes, and its numbers add up.
func TestRunWithFaults(t *testing.T) {
	t.Parallel()
	for _, whenFull := range []string{"waitlist", "reject"} {
		t.Run(whenFull, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, "", servertest.Options{})
			const people = 240
			rep, err := loadtest.Run(context.Background(), loadtest.Config{
				URL: h.URL, AdminToken: h.Token,
				Clients: 24, Count: people, Capacity: 60, WhenFull: whenFull,
				Shares: loadtest.Shares{DoubleClick: 0.2, Reregister: 0.2, Invalid: 0.1},
				Faults: loadtest.Faults{DropRequests: 0.15, DropResponses: 0.15, Resets: 0.05, Hang: 0.3},
				// Short timeouts and backoff keep the hung connections and
				// the retries quick.
				AttemptTimeout: time.Second, Wait: 500 * time.Millisecond,
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
				Grace: 30 * time.Second, Seed: 7,
			})
			if err != nil {
				t.Fatal(err)
			}
			requirePass(t, rep)
			v := rep.Verdict
			if rep.Started != people || v.People != people {
				t.Errorf("started %d people, checked %d, want %d", rep.Started, v.People, people)
			}
			if v.ByStatus["stored"] != 60 {
				t.Errorf("%d stored, want the capacity, 60: %v", v.ByStatus["stored"], v.ByStatus)
			}
			// Every valid person ends with exactly one live entry (waitlist)
			// or a stored one or a refusal (reject).
			valid := people - v.Refused.Invalid
			switch whenFull {
			case "waitlist":
				if v.Stored != valid || v.Refused.Full != 0 {
					t.Errorf("%d live entries and %d full answers for %d valid people", v.Stored, v.Refused.Full, valid)
				}
			case "reject":
				if v.Stored != 60 || v.Refused.Full == 0 {
					t.Errorf("%d live entries and %d full answers, want 60 and some", v.Stored, v.Refused.Full)
				}
			}
			if v.Refused.Invalid == 0 || v.Refused.AlreadyRegistered == 0 {
				t.Errorf("refusals %+v: the shares should have made some of each", v.Refused)
			}
			if rep.Proxy == nil || rep.Proxy.DroppedRequests == 0 || rep.Proxy.DroppedResponses == 0 {
				t.Errorf("proxy %+v: the faults did not happen", rep.Proxy)
			}
			if rep.Requests.StatusQueries == 0 {
				t.Error("no status queries: the dropped answers did not reach the protocol")
			}
			if rep.Latency.Ack.Count == 0 || rep.Latency.Outcome.P99 < rep.Latency.Outcome.P50 {
				t.Errorf("latency %+v", rep.Latency)
			}
		})
	}
}

// distorting is a store whose export lies in one way: the checker must
// catch each lie. (A checker that cannot fail proves nothing.)
type distorting struct {
	server.Store
	form   func(string) bool
	change func(rows []store.Row) []store.Row
}

func (d *distorting) Export(ctx context.Context, form string, fn func(store.Row) error) error {
	if !d.form(form) {
		return d.Store.Export(ctx, form, fn)
	}
	var rows []store.Row
	if err := d.Store.Export(ctx, form, func(r store.Row) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range d.change(rows) {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func TestCheckerCatchesABadStore(t *testing.T) {
	t.Parallel()
	firstLive := func(rows []store.Row) int {
		for i, r := range rows {
			if r.Status == "stored" || r.Status == "waitlisted" {
				return i
			}
		}
		return -1
	}
	tests := []struct {
		name   string
		change func([]store.Row) []store.Row
		check  func(v *loadtest.Verdict) bool
	}{
		{name: "a stored entry missing", check: func(v *loadtest.Verdict) bool { return v.Lost > 0 },
			change: func(rows []store.Row) []store.Row {
				i := firstLive(rows)
				return append(rows[:i:i], rows[i+1:]...)
			}},
		{name: "an entry twice", check: func(v *loadtest.Verdict) bool { return v.Duplicated > 0 },
			change: func(rows []store.Row) []store.Row { return append(rows, rows[firstLive(rows)]) }},
		{name: "a waitlisted entry stored beyond capacity", check: func(v *loadtest.Verdict) bool { return v.Oversold > 0 },
			change: func(rows []store.Row) []store.Row {
				for i := range rows {
					if rows[i].Status == "waitlisted" {
						rows[i].Status = "stored"
						break
					}
				}
				return rows
			}},
		{name: "a duplicate made live", check: func(v *loadtest.Verdict) bool { return v.Duplicated > 0 || v.Violations > 0 },
			change: func(rows []store.Row) []store.Row {
				for i := range rows {
					if rows[i].Status == "duplicate" {
						rows[i].Status = "waitlisted"
						break
					}
				}
				return rows
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, "", servertest.Options{
				WrapStore: func(s server.Store) server.Store {
					return &distorting{Store: s, form: func(f string) bool { return strings.HasPrefix(f, "loadtest-") }, change: tc.change}
				},
				// The wrapper has no store.TxApplier: no fast path.
				Config: func(c *config.Config) { c.DecideAtAppend = false },
			})
			rep, err := loadtest.Run(context.Background(), loadtest.Config{
				URL: h.URL, AdminToken: h.Token, Clients: 8, Count: 40, Capacity: 10,
				Shares: loadtest.Shares{Reregister: 0.5}, Seed: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.Verdict == nil || !tc.check(rep.Verdict) {
				var b strings.Builder
				rep.WriteText(&b)
				t.Fatalf("the checker did not catch it:\n%s", b.String())
			}
		})
	}
}

// The run launches the server itself and kills it with SIGKILL during the
// load; nothing acknowledged is lost across the restarts.
func TestRunSpawnAndKill(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	rep, err := loadtest.Run(context.Background(), loadtest.Config{
		Spawn:     []string{os.Args[0], "serve", "--log-level", "warn"},
		SpawnEnv:  append(os.Environ(), helperEnv+"=1"),
		WorkDir:   work,
		KillEvery: 700 * time.Millisecond,
		Clients:   16, Duration: 2500 * time.Millisecond, Capacity: 50,
		Shares:         loadtest.Shares{DoubleClick: 0.1, Reregister: 0.1},
		Faults:         loadtest.Faults{DropResponses: 0.1},
		AttemptTimeout: time.Second, Wait: 500 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		Grace: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePass(t, rep)
	if rep.Kills < 1 {
		t.Errorf("no kill in 2.5s at one every 700ms")
	}
	if rep.Verdict.Acknowledged == 0 {
		t.Error("nothing was acknowledged")
	}
	// The server is stopped when Run returns: its port is free again.
	addr := strings.TrimPrefix(strings.Fields(rep.Target)[0], "http://")
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("the spawned server still answers on %s", addr)
	}
}

// A server that dies by itself (not killed by the run) fails the run,
// and the report says so.
func TestRunServerDiesByItself(t *testing.T) {
	t.Parallel()
	rep, err := loadtest.Run(context.Background(), loadtest.Config{
		Spawn:    []string{os.Args[0], "serve", "--log-level", "warn"},
		SpawnEnv: append(os.Environ(), helperEnv+"=1", crashEnv+"=800ms"),
		WorkDir:  t.TempDir(),
		Clients:  4, Duration: 2 * time.Second,
		AttemptTimeout: 500 * time.Millisecond, Wait: 200 * time.Millisecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !strings.Contains(strings.Join(rep.Errors, "\n"), "exited by itself") {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("want a failed run naming the crash:\n%s", b.String())
	}
}

// Plain mode drives any endpoint with the same payloads, once each.
func TestRunPlain(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil || v["phone"] == nil {
			http.Error(w, "bad", 400)
			return
		}
		n.Add(1)
		w.WriteHeader(201)
		io.WriteString(w, `{}`) //nolint:errcheck // test server
	}))
	defer srv.Close()
	rep, err := loadtest.Run(context.Background(), loadtest.Config{Plain: true, URL: srv.URL + "/records", Clients: 4, Count: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Plain == nil || rep.Plain.OK != 50 || n.Load() != 50 || rep.Verdict != nil {
		t.Fatalf("plain run: ok=%v %+v, server decoded %d", rep.OK, rep.Plain, n.Load())
	}
}

// A run against a server it did not launch closes its form at the end
// (the admin API cannot delete one), unless told to keep it open.
func TestRunClosesItsFormUnlessKept(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "", servertest.Options{})
	for _, keep := range []bool{false, true} {
		form := fmt.Sprintf("loadtest-keep-%v", keep)
		rep, err := loadtest.Run(context.Background(), loadtest.Config{
			URL: h.URL, AdminToken: h.Token, Clients: 4, Count: 20, Form: form, KeepForm: keep,
		})
		if err != nil {
			t.Fatal(err)
		}
		requirePass(t, rep)
		resp, err := http.Get(h.URL + "/v1/forms/" + form)
		if err != nil {
			t.Fatal(err)
		}
		var pub struct{ Open bool }
		err = json.NewDecoder(resp.Body).Decode(&pub)
		resp.Body.Close()
		if err != nil || pub.Open != keep || rep.FormClosed == keep {
			t.Errorf("keep %v: the form is open: %v (%v); the report says closed: %v", keep, pub.Open, err, rep.FormClosed)
		}
	}
}

// Bad configurations are refused before anything starts, with a message
// that names the setting.
func TestConfigRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  loadtest.Config
		want string
	}{
		{"not loopback", loadtest.Config{URL: "http://10.0.0.1:8080", AdminToken: "x"}, "not a loopback"},
		{"public name", loadtest.Config{URL: "http://example.org", AdminToken: "x"}, "not a loopback"},
		{"no target", loadtest.Config{}, "--url"},
		{"kill without spawn", loadtest.Config{URL: "http://127.0.0.1:1", KillEvery: time.Second}, "--spawn"},
		{"share above 1", loadtest.Config{URL: "http://127.0.0.1:1", Shares: loadtest.Shares{Invalid: 1.5}}, "--invalid"},
		{"too many clients", loadtest.Config{URL: "http://127.0.0.1:1", Clients: 1 << 20}, "--clients"},
		{"too long", loadtest.Config{URL: "http://127.0.0.1:1", Duration: 48 * time.Hour}, "--duration"},
		{"plain with faults", loadtest.Config{Plain: true, URL: "http://127.0.0.1:1", Faults: loadtest.Faults{DropRequests: 0.1}}, "--plain"},
		{"wait beyond timeout", loadtest.Config{URL: "http://127.0.0.1:1", Wait: 5 * time.Second, AttemptTimeout: time.Second}, "--wait"},
	}
	for _, tc := range tests {
		_, err := loadtest.Run(context.Background(), tc.cfg)
		if err == nil || !loadtest.IsConfigError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a config error mentioning %q", tc.name, err, tc.want)
		}
	}
}

// The mix (issue 28): a spawned server takes a plain form, a
// proof-of-work form and a file form in one run, every submission
// answered 2xx, each phase's rate and its ratio to the plain form's
// reported.
func TestMixRun(t *testing.T) {
	t.Parallel()
	rep, err := loadtest.RunMix(context.Background(), loadtest.Config{
		Spawn:    []string{os.Args[0], "serve", "--log-level", "warn"},
		SpawnEnv: append(os.Environ(), helperEnv+"=1"),
		Clients:  8,
		Count:    40,
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if !rep.OK || len(rep.Phases) != 3 {
		t.Fatalf("the mix did not pass:\n%s", b.String())
	}
	for _, p := range rep.Phases {
		if p.Stored+p.Accepted != 40 || p.RatePerS <= 0 || p.RatioToPlain <= 0 {
			t.Errorf("%s phase: %+v", p.Kind, p)
		}
	}
	if rep.Phases[0].Kind != "plain" || rep.Phases[0].RatioToPlain != 1 || !strings.Contains(b.String(), "vs plain") {
		t.Fatalf("report:\n%s", b.String())
	}
	// Faults and shares need the checker: the mix refuses them.
	if _, err := loadtest.RunMix(context.Background(), loadtest.Config{URL: "http://127.0.0.1:1", Faults: loadtest.Faults{DropRequests: 0.1}}); !loadtest.IsConfigError(err) {
		t.Fatalf("a mix with faults: %v", err)
	}
}
