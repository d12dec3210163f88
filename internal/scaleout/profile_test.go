package scaleout

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// BenchmarkScaleProfile writes CPU profiles of one instance on NATS +
// PostgreSQL and of the embedded tier under the same waiting load, for
// finding what the networked tier spends its CPU on (BENCHMARKS §3):
//
//	FORMD_SCALE_PROFILE=/tmp/prof FORMD_TEST_POSTGRES_URL=… \
//	  go test ./internal/scaleout/ -run '^$' -bench '^BenchmarkScaleProfile$' -benchtime 1x -v -timeout 10m
//	go tool pprof -top /tmp/prof/nats-postgres.pprof
func BenchmarkScaleProfile(b *testing.B) {
	dir := os.Getenv("FORMD_SCALE_PROFILE")
	if dir == "" {
		b.Skip("set FORMD_SCALE_PROFILE=DIR: where the profiles go")
	}
	pgtest.URL(b)
	nurl := natsProcess(b)
	const seconds = 15
	// FORMD_SCALE_PROFILE_INSTANCES=3 profiles each of three instances
	// on NATS + PostgreSQL under the load spread over them as well.
	tiers := []struct {
		name        string
		journal, st string
		instances   int
	}{{"embedded", "sqlite", "sqlite", 1}, {"nats-postgres", nurl, pgtest.URL(b), 1}}
	if n := envInt("FORMD_SCALE_PROFILE_INSTANCES", 1); n > 1 {
		tiers = append(tiers, struct {
			name        string
			journal, st string
			instances   int
		}{fmt.Sprintf("nats-postgres-x%d", n), nurl, pgtest.URL(b), n})
	}
	for _, tier := range tiers {
		var debug []string
		var ins []*instance
		d := newDeployment(b, tier.journal, tier.st, 1_000_000)
		for k := range tier.instances {
			debug = append(debug, fmt.Sprintf("127.0.0.1:%d", freePort(b)))
			dk := d
			dk.extra = append(append([]string(nil), d.extra...), "--debug-addr", debug[k])
			ins = append(ins, dk.start(b, fmt.Sprintf("profile-%s-%d", tier.name, k)))
		}
		st := &stats{}
		c := newClient(urlsOf(ins), st)
		c.wait = 10
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			load{submissions: 1_000_000, people: 1_000_000, clients: 64}.run(ctx, c, "p")
		}()
		<-st.ackedAtLeast(2000) // past the start: the load at its pace
		before := st.acked.Load()
		var wg sync.WaitGroup
		errs := make(chan error, len(ins))
		for k := range ins {
			wg.Go(func() {
				resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debug[k], seconds))
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", tier.name, k)))
				if err == nil {
					_, err = io.Copy(out, resp.Body)
					out.Close()
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		acked := st.acked.Load() - before
		cancel()
		<-done
		for _, in := range ins {
			in.stop()
		}
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		b.Logf("%s: %d submissions answered during the %d s profile (%s/%s-*.pprof)", tier.name, acked, seconds, dir, tier.name)
	}
}

// BenchmarkIdleCost measures what an instance on NATS + PostgreSQL that takes
// no submissions costs in CPU a second (its loops: fetch, forms refresh,
// outbox, reconciler, leases), and the NATS server and PostgreSQL backends
// with it, for BENCHMARKS §3; FORMD_SCALE_BENCH_BASELINE adds an earlier
// binary's:
//
//	FORMD_TEST_POSTGRES_URL=… go test ./internal/scaleout/ -run '^$' -bench '^BenchmarkIdleCost$' -benchtime 1x -v
func BenchmarkIdleCost(b *testing.B) {
	pgtest.URL(b)
	nurl, natsPID := natsServerProcess(b)
	bins := []string{""}
	if base := os.Getenv("FORMD_SCALE_BENCH_BASELINE"); base != "" {
		bins = append(bins, base)
	}
	const window = 20 * time.Second
	for round := range 2 {
		for i, bin := range bins {
			app := fmt.Sprintf("formd_idle_%d_%d", round, i)
			d := newDeployment(b, nurl, pgtest.URL(b)+"&application_name="+app, 100, "--forms-refresh", "500ms", "--reconcile-every", "5s")
			d.bin = bin
			in := d.start(b, app)
			cpu0, nats0, pg0 := cpuOf([]*instance{in}), cpuOfPIDs([]int{natsPID}), backendsCPU(b, d, app)
			start := time.Now()
			<-time.After(window) // the measurement's window, not a wait for a condition
			el := time.Since(start).Seconds()
			cpu, nats, pg := cpuOf([]*instance{in})-cpu0, cpuOfPIDs([]int{natsPID})-nats0, backendsCPU(b, d, app)-pg0
			if bin == "" {
				b.ReportMetric(float64(cpu.Microseconds())/1000/el, "idle-CPU-ms/s")
			}
			name := "this tree"
			if bin != "" {
				name = bin
			}
			b.Logf("round %d, %s: idle instance %.1f ms CPU/s, NATS %.1f ms/s, PostgreSQL backends %.1f ms/s (load average %s)",
				round+1, name, float64(cpu.Microseconds())/1000/el, float64(nats.Microseconds())/1000/el, float64(pg.Microseconds())/1000/el, loadAvg())
			in.stop()
		}
	}
}
