// Command webhookcheck is the independent webhook check of issue 18: a
// black box that must pass every run. A receiver in this process answers
// 500 to the first attempt of about a third of the events (each event's
// fate drawn at random when it first arrives) and 204 to everything else;
// formd (a real `formd serve`, embedded store) gets -submissions entries
// from 20 clients, each retried with its Idempotency-Key until answered,
// and is killed with SIGKILL when half of them are acknowledged, then
// started again on the same data. The run passes when every acknowledged
// entry's submission.stored event has reached the receiver within -wait
// of the last acknowledgement.
//
// It reports, per run, the deliveries that arrived, how long after the
// burst the last one came, the longest stretch with no delivery while some
// were missing, and the receiver's attempts; the exit status is 1 when any
// run failed.
//
// Usage:
//
//	go build -o /tmp/formd ./cmd/formd
//	go run ./bench/webhookcheck -formd /tmp/formd -runs 10
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/formd/formd/bench/proc"
)

func main() {
	bin := flag.String("formd", "", "the formd binary to run (required)")
	runs := flag.Int("runs", 10, "runs; each must pass")
	subs := flag.Int("submissions", 300, "entries per run")
	wait := flag.Duration("wait", 90*time.Second, "how long after the last acknowledgement every delivery must have arrived")
	failRate := flag.Float64("fail", 1.0/3, "share of events whose first attempt the receiver answers 500")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-formd is required: the path of a built formd binary (go build -o /tmp/formd ./cmd/formd)")
	}
	fmt.Printf("# %s, load average %s: %d runs of %d submissions, %.0f%% of first attempts answered 500, kill -9 at half, %s to deliver\n",
		time.Now().UTC().Format(time.RFC3339), proc.LoadAvg(), *runs, *subs, *failRate*100, *wait)
	passed := 0
	for r := 1; r <= *runs; r++ {
		res, err := run(*bin, r, *subs, *wait, *failRate)
		if err != nil {
			fmt.Printf("run %2d  ERROR %v\n", r, err)
			continue
		}
		fmt.Println(res)
		if res.ok() {
			passed++
		}
	}
	fmt.Printf("\n%d of %d runs passed\n", passed, *runs)
	if passed != *runs {
		os.Exit(1)
	}
}

// receiver fails the first attempt of a share of the events.
type receiver struct {
	failRate float64
	mu       sync.Mutex
	fate     map[string]bool      // webhook-id seen → whether its first attempt failed
	got      map[string]time.Time // webhook-id → first 2xx answered
	attempts atomic.Int64
	failed   atomic.Int64
	repeats  atomic.Int64
	last     atomic.Int64 // unix nanos of the latest new delivery
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck // only the headers matter
	rc.attempts.Add(1)
	id := r.Header.Get("webhook-id")
	rc.mu.Lock()
	_, seen := rc.fate[id]
	if !seen {
		// Drawn once, for the first attempt; later ones are answered 204.
		rc.fate[id] = rand.Float64() < rc.failRate
	}
	if !seen && rc.fate[id] {
		rc.mu.Unlock()
		rc.failed.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if _, dup := rc.got[id]; dup {
		rc.repeats.Add(1)
	} else {
		rc.got[id] = time.Now()
		rc.last.Store(time.Now().UnixNano())
	}
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// delivered counts the entries whose submission.stored event arrived.
func (rc *receiver) delivered(ids []string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := rc.got["evt_"+id+"_stored"]; ok {
			n++
		}
	}
	return n
}

type result struct {
	run, acked, delivered       int
	lastAfter, longestGap       time.Duration
	attempts, failed, repeats   int64
	restarts, unansweredRetries int
}

func (r result) ok() bool { return r.delivered == r.acked && r.acked > 0 }

func (r result) String() string {
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	return fmt.Sprintf("run %2d  %s  %d/%d delivered, the last %.1fs after the burst; longest wait with deliveries missing %.1fs; receiver: %d attempts, %d first attempts failed, %d repeats; %d requests retried across the kill",
		r.run, verdict, r.delivered, r.acked, r.lastAfter.Seconds(), r.longestGap.Seconds(), r.attempts, r.failed, r.repeats, r.unansweredRetries)
}

const formYAML = `id: check
fields:
  - {name: name, type: text, required: true, max: 100}
rate_limit: off
notify:
  webhooks:
    - {url: "%s/hook", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
`

func run(bin string, n, subs int, wait time.Duration, failRate float64) (result, error) {
	res := result{run: n}
	rc := &receiver{failRate: failRate, fate: map[string]bool{}, got: map[string]time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: rc}
	go srv.Serve(ln) //nolint:errcheck // until Close
	defer srv.Close()

	dir, err := os.MkdirTemp("", "formd-webhookcheck-*")
	if err != nil {
		return res, err
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	formsFile := filepath.Join(dir, "forms.yaml")
	if err := os.WriteFile(formsFile, fmt.Appendf(nil, formYAML, "http://"+ln.Addr().String()), 0o600); err != nil {
		return res, err
	}
	port, err := proc.FreePort()
	if err != nil {
		return res, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start := func(i int) (*exec.Cmd, error) {
		cmd := exec.Command(bin, "serve", "--data", filepath.Join(dir, "data"), "--addr", addr, "--forms", formsFile,
			"--log-level", "warn", "--webhook-allow", "127.0.0.0/8")
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("formd-%d.log", i)))
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := proc.WaitReady("http://"+addr+"/readyz", 30*time.Second); err != nil {
			cmd.Process.Kill() //nolint:errcheck // it may be gone
			cmd.Wait()         //nolint:errcheck // its status does not matter
			return nil, err
		}
		return cmd, nil
	}
	cmd, err := start(0)
	if err != nil {
		return res, err
	}
	var cmdMu sync.Mutex
	defer func() {
		cmdMu.Lock()
		defer cmdMu.Unlock()
		cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
		cmd.Wait()                       //nolint:errcheck // its status does not matter
	}()

	client := &http.Client{Timeout: 5 * time.Second}
	url := "http://" + addr + "/v1/forms/check/submissions"
	next := atomic.Int64{}
	acked := atomic.Int64{}
	retried := atomic.Int64{}
	var idsMu sync.Mutex
	var ids []string
	killed := make(chan struct{})
	var killOnce sync.Once
	var restartErr error
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(subs) {
					return
				}
				id, tries, err := submit(client, url, fmt.Sprintf("check-%d-%d", n, i), fmt.Sprintf("Person %d", i))
				if err != nil {
					log.Printf("run %d: submission %d: %v", n, i, err)
					continue
				}
				if tries > 1 {
					retried.Add(1)
				}
				idsMu.Lock()
				ids = append(ids, id)
				idsMu.Unlock()
				if acked.Add(1) == int64(subs/2) {
					killOnce.Do(func() {
						// kill -9 in the middle, and start it again on the
						// same data: what it had not delivered, it delivers.
						go func() {
							defer close(killed)
							cmdMu.Lock()
							defer cmdMu.Unlock()
							cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone
							cmd.Wait()                          //nolint:errcheck // killed
							c, err := start(1)
							if err != nil {
								restartErr = err
								return
							}
							cmd = c
						}()
					})
				}
			}
		})
	}
	wg.Wait()
	<-killed
	if restartErr != nil {
		keep = true
		return res, fmt.Errorf("restart after kill -9: %w (kept %s)", restartErr, dir)
	}
	burst := time.Now()
	res.acked, res.unansweredRetries, res.restarts = len(ids), int(retried.Load()), 1
	lastProgress, lastCount := burst, -1
	for {
		got := rc.delivered(ids)
		now := time.Now()
		if got != lastCount {
			lastCount, lastProgress = got, now
		}
		res.longestGap = max(res.longestGap, now.Sub(lastProgress))
		if got == len(ids) || now.Sub(burst) > wait {
			res.delivered = got
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res.lastAfter = max(0, time.Unix(0, rc.last.Load()).Sub(burst))
	res.attempts, res.failed, res.repeats = rc.attempts.Load(), rc.failed.Load(), rc.repeats.Load()
	if !res.ok() {
		keep = true
		fmt.Printf("run %d: data and logs kept in %s\n", n, dir)
	}
	return res, nil
}

// submit sends one entry until formd answers it (201, or 200 for a
// replay), through the kill and the restart; it returns the entry's id.
func submit(client *http.Client, url, key, name string) (string, int, error) {
	body := fmt.Sprintf(`{"name":%q}`, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pause := 20 * time.Millisecond
	for tries := 1; ; tries++ {
		if ctx.Err() != nil {
			return "", tries, errors.New("no answer in 2 minutes")
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
				var out struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(b, &out) == nil && out.ID != "" {
					return out.ID, tries, nil
				}
			}
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}
