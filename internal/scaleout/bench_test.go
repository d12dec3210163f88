package scaleout

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3" // reads the embedded store's file
)

// BenchmarkScale measures throughput and latency of 1, 2 and 3 instances
// on NATS + PostgreSQL beside one embedded instance (sqlite journal and
// store), in the same run, for BENCHMARKS.md. It is a measurement, not a
// test: it runs only under -bench, once (its rounds are inside it), and
// reports each tier's median rate and latencies as metrics beside the
// table it logs:
//
//	FORMD_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test ./internal/scaleout/ -run '^$' -bench '^BenchmarkScale$' -benchtime 1x -v -timeout 20m
//
// NATS runs as its own process (nats-server v2.15.2, built from the module
// formd pins) with sync_interval: always, so that its acks mean fsync'd, as
// the sqlite journal's do. FORMD_SCALE_BENCH_ROUNDS (default 3) and
// FORMD_SCALE_BENCH_N (submissions per round, default 3000) tune it.
func BenchmarkScale(b *testing.B) {
	pgtest.URL(b) // skips without PostgreSQL
	rounds := envInt("FORMD_SCALE_BENCH_ROUNDS", 3)
	n := envInt("FORMD_SCALE_BENCH_N", 3000)
	const clients = 64
	nurl, natsPID := natsServerProcess(b)
	five := os.Getenv("FORMD_SCALE_BENCH_FIVE") != ""

	type tier struct {
		name      string
		instances int
		nats      bool
		bin       string // another formd binary, for a baseline in the same run
	}
	tiers := []tier{{"embedded (sqlite journal + sqlite store)", 1, false, ""}, {"nats + postgres", 1, true, ""}, {"nats + postgres", 2, true, ""}, {"nats + postgres", 3, true, ""}}
	if five {
		tiers = append(tiers, tier{"nats + postgres", 5, true, ""})
	}
	// FORMD_SCALE_BENCH_BASELINE names an earlier release's binary, whose
	// tiers run in the same rounds (alternating with this tree's).
	if base := os.Getenv("FORMD_SCALE_BENCH_BASELINE"); base != "" {
		tiers = append(tiers, tier{"baseline: embedded", 1, false, base}, tier{"baseline: nats + postgres", 1, true, base}, tier{"baseline: nats + postgres", 3, true, base})
	}
	// natsUS and pgUS are the NATS server's and the PostgreSQL backends'
	// CPU per submission, during the waiting load (the backends are the
	// instances' connections, found by their application_name; the
	// servers' shared background processes are left out).
	// The async* costs are the same during the async run, to the last
	// entry decided: the processors deciding a backlog in full batches,
	// the cost at saturation.
	type sample struct {
		rate, p50, p99, asyncRate, decideRate, cpuUS, natsUS, pgUS float64
		asyncCPU, asyncNATS, asyncPG                               float64
	}
	results := make([][]sample, len(tiers))
	for r := range rounds {
		for i, tr := range tiers {
			var d deployment
			app := fmt.Sprintf("formd_bench_%d_%d", r, i)
			if tr.nats {
				d = newDeployment(b, nurl, pgtest.URL(b)+"&application_name="+app, n*2)
			} else {
				d = newDeployment(b, "sqlite", "sqlite", n*2)
			}
			d.bin = tr.bin
			var ins []*instance
			for k := range tr.instances {
				ins = append(ins, d.start(b, fmt.Sprintf("bench-%d-%d-%d", r, i, k)))
			}
			st := &stats{}
			c := newClient(urlsOf(ins), st)
			c.wait = 10
			l := load{submissions: n, people: n, clients: clients}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			cpu0, nats0, pg0 := cpuOf(ins), cpuOfPIDs([]int{natsPID}), backendsCPU(b, d, app)
			start := time.Now()
			answers := l.run(ctx, c, fmt.Sprintf("b%d", r))
			wall := time.Since(start)
			cpu, natsCPU, pgCPU := cpuOf(ins)-cpu0, cpuOfPIDs([]int{natsPID})-nats0, backendsCPU(b, d, app)-pg0
			cancel()
			var lat []float64
			for _, a := range answers {
				if !a.acked {
					b.Fatalf("%s: %s unanswered: %s", tr.name, a.key, a.status)
				}
				lat = append(lat, float64(a.done.Sub(a.first).Microseconds())/1000)
			}
			slices.Sort(lat)
			s := sample{rate: float64(n) / wall.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100],
				cpuUS: float64(cpu.Microseconds()) / float64(n)}
			if tr.nats {
				s.natsUS = float64(natsCPU.Microseconds()) / float64(n)
				s.pgUS = float64(pgCPU.Microseconds()) / float64(n)
			}
			// The same again with Prefer: respond-async: how fast intake
			// acknowledges (journals), and how fast the processors decide
			// the backlog, without the wait for outcomes in the loop.
			c.wait = 0
			ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
			cpu0, nats0, pg0 = cpuOf(ins), cpuOfPIDs([]int{natsPID}), backendsCPU(b, d, app)
			start = time.Now()
			l.run(ctx, c, fmt.Sprintf("a%d", r))
			s.asyncRate = float64(n) / time.Since(start).Seconds()
			waitDecided(b, ctx, d, ins[0], 2*n)
			s.decideRate = float64(n) / time.Since(start).Seconds()
			s.asyncCPU = float64((cpuOf(ins) - cpu0).Microseconds()) / float64(n)
			if tr.nats {
				s.asyncNATS = float64((cpuOfPIDs([]int{natsPID}) - nats0).Microseconds()) / float64(n)
				s.asyncPG = float64((backendsCPU(b, d, app) - pg0).Microseconds()) / float64(n)
			}
			cancel()
			results[i] = append(results[i], s)
			b.Logf("round %d, %s × %d: %.0f submissions/s, p50 %.1f ms, p99 %.1f ms, formd CPU %.0f µs/submission (NATS %.0f, PostgreSQL backends %.0f); async: %.0f acks/s, %.0f decided/s, formd CPU %.0f µs/submission (NATS %.0f, PostgreSQL backends %.0f) (%s); load average %s",
				r+1, tr.name, tr.instances, s.rate, s.p50, s.p99, s.cpuUS, s.natsUS, s.pgUS, s.asyncRate, s.decideRate, s.asyncCPU, s.asyncNATS, s.asyncPG, st, loadAvg())
			for _, in := range ins {
				in.stop()
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| tier | instances | waiting: submissions/s | p50 ms | p99 ms | formd CPU µs/submission (all instances) | NATS CPU µs/submission | PostgreSQL CPU µs/submission | async: acks/s | async: decided/s | async: formd / NATS / PostgreSQL CPU µs/submission |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, tr := range tiers {
		med := func(f func(sample) float64) float64 {
			v := make([]float64, 0, len(results[i]))
			for _, s := range results[i] {
				v = append(v, f(s))
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		tag := "embedded"
		if tr.nats {
			tag = "nats-postgres"
		}
		if tr.bin != "" {
			tag = "baseline-" + tag
		}
		tag = fmt.Sprintf("%s-x%d", tag, tr.instances)
		b.ReportMetric(med(func(s sample) float64 { return s.rate }), "submissions/s:"+tag)
		b.ReportMetric(med(func(s sample) float64 { return s.p99 }), "p99-ms:"+tag)
		fmt.Fprintf(&out, "| %s | %d | %.0f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f / %.0f / %.0f |\n", tr.name, tr.instances,
			med(func(s sample) float64 { return s.rate }), med(func(s sample) float64 { return s.p50 }), med(func(s sample) float64 { return s.p99 }),
			med(func(s sample) float64 { return s.cpuUS }), med(func(s sample) float64 { return s.natsUS }), med(func(s sample) float64 { return s.pgUS }),
			med(func(s sample) float64 { return s.asyncRate }), med(func(s sample) float64 { return s.decideRate }),
			med(func(s sample) float64 { return s.asyncCPU }), med(func(s sample) float64 { return s.asyncNATS }), med(func(s sample) float64 { return s.asyncPG }))
	}
	fmt.Fprintf(&out, "\nmedians of %d rounds; %d submissions per round from %d concurrent clients (Prefer: wait=10, each waits for its outcome)\n", rounds, n, clients)
	b.Log(out.String())
}

// natsProcess runs nats-server (built from the pinned module) as its own
// process with JetStream and sync_interval: always.
func natsProcess(t testing.TB) string {
	url, _ := natsServerProcess(t)
	return url
}

// natsServerProcess is natsProcess, and the server's process id.
func natsServerProcess(t testing.TB) (string, int) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("build nats-server: %v\n%s", err, out)
	}
	port := freePort(t)
	conf := filepath.Join(dir, "nats.conf")
	// FORMD_SCALE_BENCH_NATS_DIR puts the stream elsewhere, such as on
	// tmpfs when the disk's fsyncs (shared with other work) would bound
	// the rate rather than CPU.
	storeDir := filepath.Join(dir, "js")
	if d := os.Getenv("FORMD_SCALE_BENCH_NATS_DIR"); d != "" {
		var err error
		if storeDir, err = os.MkdirTemp(d, "formd-bench-js-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(storeDir) })
	}
	if err := os.WriteFile(conf, fmt.Appendf(nil, "host: 127.0.0.1\nport: %d\njetstream {\n  store_dir: %q\n  sync_interval: always\n}\n", port, storeDir), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	poll.UntilNil(t, "nats-server to take connections", 10*time.Second, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	return fmt.Sprintf("nats://127.0.0.1:%d", port), cmd.Process.Pid
}

// waitDecided polls the store until it holds want entries of the form,
// until ctx's deadline.
func waitDecided(t testing.TB, ctx context.Context, d deployment, in *instance, want int) {
	t.Helper()
	var db *sql.DB
	if d.store == "sqlite" {
		var err error
		db, err = sql.Open("sqlite3", "file:"+filepath.Join(in.dataDir(), "store.db")+"?mode=ro&_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
	}
	deadline, _ := ctx.Deadline()
	poll.UntilNil(t, fmt.Sprintf("%d entries in the store", want), time.Until(deadline), func() error {
		var n int
		var err error
		if db != nil {
			err = db.QueryRowContext(ctx, `SELECT count(*) FROM entries WHERE form = ?`, formID).Scan(&n)
		} else {
			var conn *pgx.Conn
			if conn, err = pgx.Connect(ctx, d.store); err == nil {
				err = conn.QueryRow(ctx, `SELECT count(*) FROM entries WHERE form = $1`, formID).Scan(&n)
				conn.Close(ctx)
			}
		}
		if err == nil && n < want {
			err = fmt.Errorf("the store has %d", n)
		}
		return err
	})
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}

// cpuOf is the user and system CPU time the instances' processes have
// used (Linux /proc), the clients', NATS's and PostgreSQL's not included.
func cpuOf(ins []*instance) time.Duration {
	var pids []int
	for _, in := range ins {
		in.mu.Lock()
		pids = append(pids, in.cmd.Process.Pid)
		in.mu.Unlock()
	}
	return cpuOfPIDs(pids)
}

// backendsCPU is the CPU time the PostgreSQL backends serving the
// deployment's connections (application_name app) have used; nothing for
// a deployment on sqlite. PostgreSQL must run on this machine.
func backendsCPU(t testing.TB, d deployment, app string) time.Duration {
	if d.store == "sqlite" {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return cpuOfPIDs(pids)
}

// loadAvg is the machine's 1-minute load average, for the log.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// cpuOfPIDs is the user and system CPU time the processes have used.
func cpuOfPIDs(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
