package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
)

const crashForms = `
id: crash
fields:
  - {name: name,  type: text,  required: true}
  - {name: phone, type: phone, required: true, region: CN}
unique: [[phone]]
`

// TestCrashKill9 builds the binary, runs it on a temporary directory under
// concurrent submissions, kills it with SIGKILL at random moments six
// times, and restarts it. Afterwards every acknowledged submission is
// stored exactly once, every submission whose answer was lost in a crash
// is stored once after a retry with its key, and every journal entry has
// an outcome (formd audit).
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	data := filepath.Join(dir, "data")
	formsPath := filepath.Join(dir, "forms.yaml")
	if err := os.WriteFile(formsPath, []byte(crashForms), 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	var (
		mu      sync.Mutex
		next    int
		acked   = map[string]bool{} // key → acknowledged (2xx)
		pending = map[string]int{}  // key → person, answer unknown: retry with the same key
	)
	const rounds, clients = 6, 16
	for round := range rounds {
		srv := startFormd(t, bin, data, formsPath)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for ctx.Err() == nil {
					mu.Lock()
					person, key := -1, ""
					for k, p := range pending { // retries first, as a client's outbox does
						person, key = p, k
						delete(pending, k)
						break
					}
					if person < 0 {
						person, key = next, fmt.Sprintf("p-%d", next)
						next++
					}
					mu.Unlock()
					status := submit(client, srv.url, key, person)
					mu.Lock()
					switch {
					case status >= 200 && status < 300:
						acked[key] = true
					case status == 0 || status >= 500:
						pending[key] = person // lost answer or refusal: send again later
					default:
						t.Errorf("%s: unexpected status %d", key, status)
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond) // a random moment to crash
		srv.kill9(t)
		stop()
		wg.Wait()
		mu.Lock()
		t.Logf("round %d: %d acknowledged so far, %d answers lost to the crash", round+1, len(acked), len(pending))
		mu.Unlock()
	}

	// Restart once more: retry every lost answer with its key until it is
	// acknowledged, let the backlog drain, then stop gracefully.
	srv := startFormd(t, bin, data, formsPath)
	for key, person := range pending {
		poll.UntilNil(t, key+" acknowledged after the last restart", 30*time.Second, func() error {
			if status := submit(client, srv.url, key, person); status < 200 || status >= 300 {
				return fmt.Errorf("status %d", status)
			}
			return nil
		})
		acked[key] = true
	}
	poll.Until(t, "the journal backlog to drain", 30*time.Second, func() bool { return backlog(client, srv.metrics) == 0 })
	srv.stop(t)

	// Every journal entry has an outcome.
	var audit bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &audit, &audit); code != 0 {
		t.Fatalf("formd audit exit %d:\n%s", code, audit.String())
	}
	// Every acknowledged key is stored exactly once, and so is every phone.
	var out, errb bytes.Buffer
	if code := run([]string{"export", "--data", data, "--form", "crash", "--format", "jsonl"}, &out, &errb); code != 0 {
		t.Fatalf("formd export exit %d: %s", code, errb.String())
	}
	keys := map[string]int{}
	phones := map[string]int{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var row struct {
			Key    string
			Status string
			Data   struct{ Phone string }
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		keys[row.Key]++
		if row.Status == "stored" {
			phones[row.Data.Phone]++
		}
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s stored %d times", k, n)
		}
	}
	for p, n := range phones {
		if n != 1 {
			t.Errorf("phone %s stored %d times", p, n)
		}
	}
	lost := 0
	for k := range acked {
		if keys[k] != 1 {
			lost++
			t.Errorf("acknowledged key %s is not stored", k)
		}
	}
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged; the test proved nothing")
	}
	t.Logf("%d acknowledged, %d stored entries, %d lost; audit:\n%s", len(acked), len(keys), lost, audit.String())
}

// buildFormd compiles this command into dir.
func buildFormd(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "formd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type proc struct {
	cmd *exec.Cmd
	url string
	// metrics is the base URL of /metrics (--metrics-addr).
	metrics string
	logs    *bytes.Buffer
}

func startFormd(t *testing.T, bin, data, forms string, extra ...string) *proc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, maddr := ln.Addr().String(), mln.Addr().String()
	ln.Close()
	mln.Close()
	logs := &bytes.Buffer{}
	cmd := exec.Command(bin, append([]string{"serve", "--data", data, "--addr", addr, "--metrics-addr", maddr, "--forms", forms, "--rate-limit", "off", "--log-level", "warn"}, extra...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, url: "http://" + addr, metrics: "http://" + maddr, logs: logs}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	poll.Until(t, "formd to answer /readyz", 20*time.Second, func() bool {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func (p *proc) kill9(t *testing.T) {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

func (p *proc) stop(t *testing.T) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("formd did not stop cleanly: %v\n%s", err, p.logs.String())
	}
}

// submit sends one registration; 0 means no answer arrived.
func submit(c *http.Client, base, key string, person int) int {
	body := fmt.Sprintf(`{"name":"Person %d","phone":"139%08d"}`, person, person)
	req, err := http.NewRequest("POST", base+"/v1/forms/crash/submissions", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// backlog reads formd_journal_backlog from /metrics; -1 when unreadable.
func backlog(c *http.Client, base string) int { return metric(c, base, "formd_journal_backlog") }

// metric reads a gauge without labels from /metrics; -1 when unreadable.
func metric(c *http.Client, base, name string) int {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}
