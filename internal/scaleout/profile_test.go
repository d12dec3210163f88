package scaleout

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

// TestScaleProfile writes CPU profiles of one instance on NATS +
// PostgreSQL and of the embedded tier under the same waiting load, for
// finding what the networked tier spends its CPU on (BENCHMARKS §3):
//
//	FORMD_SCALE_PROFILE=/tmp/prof FORMD_TEST_POSTGRES_URL=… \
//	  go test ./internal/scaleout/ -run TestScaleProfile -v -timeout 10m
//	go tool pprof -top /tmp/prof/nats-postgres.pprof
func TestScaleProfile(t *testing.T) {
	dir := os.Getenv("FORMD_SCALE_PROFILE")
	if dir == "" {
		t.Skip("set FORMD_SCALE_PROFILE=DIR to write profiles (takes a minute)")
	}
	pgtest.URL(t)
	nurl := natsProcess(t)
	const seconds = 15
	for _, tier := range []struct {
		name        string
		journal, st string
	}{{"embedded", "sqlite", "sqlite"}, {"nats-postgres", nurl, pgtest.URL(t)}} {
		debug := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		d := newDeployment(t, tier.journal, tier.st, 1_000_000, "--debug-addr", debug)
		in := d.start(t, "profile-"+tier.name)
		st := &stats{}
		c := newClient(urlsOf([]*instance{in}), st)
		c.wait = 10
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			load{submissions: 1_000_000, people: 1_000_000, clients: 64}.run(ctx, c, "p")
		}()
		<-st.ackedAtLeast(2000) // past the start: the load at its pace
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", debug, seconds))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, tier.name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(out, resp.Body)
		resp.Body.Close()
		out.Close()
		cancel()
		<-done
		in.stop()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", tier.name, out.Name())
	}
}

// TestIdleCost measures what an instance on NATS + PostgreSQL that takes
// no submissions costs in CPU a second (its loops: fetch, forms refresh,
// outbox, reconciler, leases), and the NATS server and PostgreSQL backends
// with it, for BENCHMARKS §3; FORMD_SCALE_BENCH_BASELINE adds an earlier
// binary's:
//
//	FORMD_SCALE_IDLE=1 FORMD_TEST_POSTGRES_URL=… go test ./internal/scaleout/ -run TestIdleCost -v
func TestIdleCost(t *testing.T) {
	if os.Getenv("FORMD_SCALE_IDLE") == "" {
		t.Skip("set FORMD_SCALE_IDLE=1 to measure (takes a minute)")
	}
	pgtest.URL(t)
	nurl, natsPID := natsServerProcess(t)
	bins := []string{""}
	if b := os.Getenv("FORMD_SCALE_BENCH_BASELINE"); b != "" {
		bins = append(bins, b)
	}
	const window = 20 * time.Second
	for round := range 2 {
		for i, bin := range bins {
			app := fmt.Sprintf("formd_idle_%d_%d", round, i)
			d := newDeployment(t, nurl, pgtest.URL(t)+"&application_name="+app, 100, "--forms-refresh", "500ms", "--reconcile-every", "5s")
			d.bin = bin
			in := d.start(t, app)
			cpu0, nats0, pg0 := cpuOf([]*instance{in}), cpuOfPIDs([]int{natsPID}), backendsCPU(t, d, app)
			start := time.Now()
			<-time.After(window) // the measurement's window, not a wait for a condition
			el := time.Since(start).Seconds()
			cpu, nats, pg := cpuOf([]*instance{in})-cpu0, cpuOfPIDs([]int{natsPID})-nats0, backendsCPU(t, d, app)-pg0
			name := "this tree"
			if bin != "" {
				name = bin
			}
			t.Logf("round %d, %s: idle instance %.1f ms CPU/s, NATS %.1f ms/s, PostgreSQL backends %.1f ms/s (load average %s)",
				round+1, name, float64(cpu.Microseconds())/1000/el, float64(nats.Microseconds())/1000/el, float64(pg.Microseconds())/1000/el, loadAvg())
			in.stop()
		}
	}
}
