// Command deliveries is the delivery benchmark of BENCHMARKS.md: what
// signed webhooks cost intake, how fast the outbox drains, and how long an
// event takes from the person's 201 to the receiver's 2xx.
//
// Each round runs formd twice on fresh data, alternating: once with the
// benchmark form as it is ("none") and once with two webhook endpoints on
// it ("webhooks"), both pointing at a fast receiver in this process that
// answers 204 at once. A closed-loop generator (keep-alive connections,
// a new person per request) registers for -duration; the rate of 201s is
// intake's. With webhooks it then waits until the receiver has every
// entry's submission.stored event on both endpoints, and reports the
// deliveries per second from the first submission to the last delivery,
// and the backlog left when intake stopped. A paced phase (-paced
// submissions a second for -paced-for) then measures the time from each
// 201 to the receiver's answer, p50 and p99, below saturation.
//
// The server's CPU time per submission is read from /proc. The generator
// and the receiver share the machine's cores with formd, as in every
// benchmark here.
//
// Usage:
//
//	go build -o /tmp/formd ./cmd/formd
//	go run ./bench/deliveries -formd /tmp/formd -rounds 3 -duration 20s -clients 200
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/bench/proc"
)

func main() {
	bin := flag.String("formd", "", "the formd binary to run (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs both modes")
	duration := flag.Duration("duration", 20*time.Second, "how long the closed-loop phase sends")
	clients := flag.Int("clients", 200, "concurrent clients of the closed-loop phase")
	paced := flag.Int("paced", 500, "submissions a second in the paced phase (0: skip it)")
	pacedFor := flag.Duration("paced-for", 10*time.Second, "how long the paced phase sends")
	drain := flag.Duration("drain", 5*time.Minute, "how long to wait for the outbox to drain")
	flag.StringVar(&profileDir, "pprof", "", "a directory: take a CPU profile of formd during each closed-loop phase, saved there as MODE.pprof")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-formd is required: the path of a built formd binary (go build -o /tmp/formd ./cmd/formd)")
	}
	rcv := newReceiver()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, rcv) //nolint:errcheck // until the process ends
	base := "http://" + ln.Addr().String()

	fmt.Printf("# %s on %d cores, load average %s; %d rounds, %s at %d clients, paced %d/s for %s\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), proc.LoadAvg(), *rounds, *duration, *clients, *paced, *pacedFor)
	var results []result
	for r := 1; r <= *rounds; r++ {
		for _, mode := range []string{"none", "webhooks"} {
			res, err := runMode(*bin, mode, base, rcv, *duration, *clients, *paced, *pacedFor, *drain)
			if err != nil {
				log.Fatalf("round %d, %s: %v", r, mode, err)
			}
			res.round = r
			results = append(results, res)
			fmt.Println(res)
		}
	}
	summarize(results)
}

// receiver is the fast webhook receiver: it notes when each event id
// first reached each endpoint and answers 204.
type receiver struct {
	mu    sync.Mutex
	first map[string]time.Time // endpoint path + " " + webhook-id
	count atomic.Int64         // distinct (endpoint, id) pairs
	dupes atomic.Int64         // repeats of a pair
	last  atomic.Int64         // unix nanos of the latest new pair
}

func newReceiver() *receiver { return &receiver{first: map[string]time.Time{}} }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	io.Copy(io.Discard, r.Body) //nolint:errcheck // only the headers matter
	key := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.mu.Lock()
	_, seen := rc.first[key]
	if !seen {
		rc.first[key] = now
	}
	rc.mu.Unlock()
	if seen {
		rc.dupes.Add(1)
	} else {
		rc.count.Add(1)
		rc.last.Store(now.UnixNano())
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) reset() {
	rc.mu.Lock()
	rc.first = map[string]time.Time{}
	rc.mu.Unlock()
	rc.count.Store(0)
	rc.dupes.Store(0)
	rc.last.Store(0)
}

func (rc *receiver) at(path, id string) (time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t, ok := rc.first[path+" "+id]
	return t, ok
}

type result struct {
	round, clients           int
	mode                     string
	accepted, failed         int64
	intakeRate, cpuPerSubUS  float64
	deliveries, duplicates   int64
	deliveryRate             float64 // deliveries a second, first submission to last delivery
	backlogAtStop            int64   // deliveries not yet made when intake stopped
	drainAfterStop           time.Duration
	pacedP50, pacedP99       time.Duration
	pacedSent, pacedReceived int
}

func (r result) String() string {
	s := fmt.Sprintf("round %d  %-8s  intake %8.0f/s  cpu %6.1f µs/sub  %d accepted, %d failed",
		r.round, r.mode, r.intakeRate, r.cpuPerSubUS, r.accepted, r.failed)
	if r.mode == "webhooks" {
		s += fmt.Sprintf("\n          deliveries %d (+%d repeats)  %8.0f/s  backlog at stop %d, drained %.1fs later  paced 201→2xx p50 %.1f ms p99 %.1f ms (%d/%d)",
			r.deliveries, r.duplicates, r.deliveryRate, r.backlogAtStop, r.drainAfterStop.Seconds(),
			ms(r.pacedP50), ms(r.pacedP99), r.pacedReceived, r.pacedSent)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

const formYAML = `id: bench
fields:
  - {name: name,    type: text,   required: true, max: 100}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
unique: [[phone]]
rate_limit: off
`

const notifyYAML = `notify:
  webhooks:
    - {url: "%s/a", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
    - {url: "%s/b", secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"}
`

// profileDir, when set, receives CPU profiles of the closed-loop phases.
var profileDir string

func runMode(bin, mode, base string, rcv *receiver, dur time.Duration, clients, paced int, pacedFor, drain time.Duration) (result, error) {
	res := result{mode: mode, clients: clients}
	dir, err := os.MkdirTemp("", "formd-deliveries-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	def := formYAML
	if mode == "webhooks" {
		def += fmt.Sprintf(notifyYAML, base, base)
	}
	formsFile := filepath.Join(dir, "bench.yaml")
	if err := os.WriteFile(formsFile, []byte(def), 0o600); err != nil {
		return res, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return res, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"serve", "--data", filepath.Join(dir, "data"), "--addr", addr, "--forms", formsFile,
		"--log-level", "warn", "--webhook-allow", "127.0.0.0/8"}
	var debugAddr string
	if profileDir != "" {
		dport, err := proc.FreePort()
		if err != nil {
			return res, err
		}
		debugAddr = fmt.Sprintf("127.0.0.1:%d", dport)
		args = append(args, "--debug-addr", debugAddr)
	}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "formd.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
		cmd.Wait()                       //nolint:errcheck // its exit status does not matter here
	}()
	url := "http://" + addr + "/v1/forms/bench/submissions"
	if err := proc.WaitReady("http://"+addr+"/readyz", 30*time.Second); err != nil {
		b, _ := os.ReadFile(logf.Name())
		return res, fmt.Errorf("%w\n%s", err, b)
	}
	rcv.reset()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients + 10, MaxConnsPerHost: clients + 10}, Timeout: 30 * time.Second}
	gen := &generator{client: client, url: url}

	// Warm up briefly, so both modes start with open connections.
	warmStart := time.Now()
	gen.closedLoop(clients, 2*time.Second, nil)

	cpu0 := proc.CPUTicks(cmd.Process.Pid)
	start := time.Now()
	var acks sync.Map // entry id → time of the 201
	profiled := make(chan error, 1)
	if debugAddr != "" {
		go func() {
			profiled <- proc.Profile(debugAddr, min(dur-time.Second, 10*time.Second), filepath.Join(profileDir, mode+".pprof"))
		}()
	} else {
		profiled <- nil
	}
	n := gen.closedLoop(clients, dur, &acks)
	if err := <-profiled; err != nil {
		return res, err
	}
	stop := time.Now()
	cpu1 := proc.CPUTicks(cmd.Process.Pid)
	res.accepted, res.failed = n.ok, n.failed
	res.intakeRate = float64(n.ok) / stop.Sub(start).Seconds()
	if n.ok > 0 {
		res.cpuPerSubUS = float64(cpu1-cpu0) / float64(proc.ClkTck) * 1e6 / float64(n.ok)
	}
	if mode != "webhooks" {
		return res, nil
	}
	// Every entry accepted, warm-up included, on both endpoints.
	want := 2 * (n.ok + gen.warm.Load())
	res.backlogAtStop = want - rcv.count.Load()
	deadline := time.Now().Add(drain)
	for rcv.count.Load() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := rcv.count.Load(); got < want {
		return res, fmt.Errorf("the outbox did not drain in %s: %d of %d deliveries", drain, got, want)
	}
	last := time.Unix(0, rcv.last.Load())
	res.deliveries = want
	res.duplicates = rcv.dupes.Load()
	res.deliveryRate = float64(want) / last.Sub(warmStart).Seconds()
	res.drainAfterStop = max(0, last.Sub(stop))

	if paced > 0 {
		var pacedAcks sync.Map
		sent := gen.paced(paced, pacedFor, &pacedAcks)
		res.pacedSent = sent
		wantAll := 2*(n.ok+gen.warm.Load()) + 2*int64(countMap(&pacedAcks))
		deadline := time.Now().Add(drain)
		for rcv.count.Load() < wantAll && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		var lat []time.Duration
		pacedAcks.Range(func(k, v any) bool {
			id, at := k.(string), v.(time.Time)
			for _, path := range []string{"/a", "/b"} {
				if got, ok := rcv.at(path, "evt_"+id+"_stored"); ok {
					lat = append(lat, got.Sub(at))
				}
			}
			return true
		})
		res.pacedReceived = len(lat) / 2
		slices.Sort(lat)
		if len(lat) > 0 {
			res.pacedP50 = lat[len(lat)/2]
			res.pacedP99 = lat[min(len(lat)-1, len(lat)*99/100)]
		}
	}
	return res, nil
}

func countMap(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// generator registers a new person per request.
type generator struct {
	client *http.Client
	url    string
	seq    atomic.Int64
	warm   atomic.Int64 // accepted during warm-up
}

type counts struct{ ok, failed int64 }

// send registers one person and returns the entry id of a 201.
func (g *generator) send() (string, bool) {
	i := g.seq.Add(1)
	body := fmt.Sprintf(`{"name":"Person %d","phone":"+86 139 %04d %04d","tickets":1}`, i, (i/10000)%10000, i%10000)
	req, _ := http.NewRequest("POST", g.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(i, 10))
	resp, err := g.client.Do(req)
	if err != nil {
		return "", false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", false
	}
	var out struct {
		ID string `json:"id"`
	}
	if json.NewDecoder(bytes.NewReader(b)).Decode(&out) != nil || out.ID == "" {
		return "", false
	}
	return out.ID, true
}

// closedLoop sends from n clients for d; acks nil is the warm-up.
func (g *generator) closedLoop(n int, d time.Duration, acks *sync.Map) counts {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				id, good := g.send()
				if !good {
					failed.Add(1)
					continue
				}
				if acks == nil {
					g.warm.Add(1)
					continue
				}
				ok.Add(1)
				acks.Store(id, time.Now())
			}
		})
	}
	wg.Wait()
	return counts{ok.Load(), failed.Load()}
}

// paced sends rate submissions a second for d, each on its own goroutine.
func (g *generator) paced(rate int, d time.Duration, acks *sync.Map) int {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	sent := 0
	for time.Now().Before(end) {
		<-tick.C
		sent++
		wg.Go(func() {
			if id, ok := g.send(); ok {
				acks.Store(id, time.Now())
			}
		})
	}
	wg.Wait()
	return sent
}

func summarize(rs []result) {
	med := func(f func(result) float64, mode string) float64 {
		return proc.Median(rs, func(r result) bool { return r.mode == mode }, f)
	}
	var ratios []float64
	for _, r := range rs {
		if r.mode != "webhooks" {
			continue
		}
		for _, b := range rs {
			if b.mode == "none" && b.round == r.round && b.intakeRate > 0 {
				ratios = append(ratios, r.intakeRate/b.intakeRate)
			}
		}
	}
	slices.Sort(ratios)
	fmt.Println()
	fmt.Println("| mode | intake/s (median) | server CPU µs/submission | deliveries/s | backlog at stop | drained after stop | 201→2xx p50 | p99 |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	fmt.Printf("| no webhooks | %.0f | %.1f | | | | | |\n", med(func(r result) float64 { return r.intakeRate }, "none"), med(func(r result) float64 { return r.cpuPerSubUS }, "none"))
	fmt.Printf("| two webhooks | %.0f | %.1f | %.0f | %.0f | %.1f s | %.1f ms | %.1f ms |\n",
		med(func(r result) float64 { return r.intakeRate }, "webhooks"), med(func(r result) float64 { return r.cpuPerSubUS }, "webhooks"),
		med(func(r result) float64 { return r.deliveryRate }, "webhooks"), med(func(r result) float64 { return float64(r.backlogAtStop) }, "webhooks"),
		med(func(r result) float64 { return r.drainAfterStop.Seconds() }, "webhooks"),
		med(func(r result) float64 { return ms(r.pacedP50) }, "webhooks"), med(func(r result) float64 { return ms(r.pacedP99) }, "webhooks"))
	if len(ratios) > 0 {
		fmt.Printf("\nintake with two webhooks / without, per round: %v; median %.2f\n", proc.List(ratios), ratios[len(ratios)/2])
	}
}
