package main

import (
	"bufio"
	"bytes"
	"context"
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
	formsPath := writeForms(t, dir, crashForms)
	client := loadClient()

	// A lost answer or a refusal (5xx) is sent again later, under its key.
	ppl := newPeople("p-", true)
	const rounds, clients = 6, 16
	for round := range rounds {
		srv := startFormd(t, bin, data, formsPath)
		ctx, stop := context.WithCancel(context.Background())
		wait := startClients(ctx, clients, func() {
			if key, status := ppl.send(client, srv.url); !acknowledged(status) && !answerLost(status) {
				t.Errorf("%s: unexpected status %d", key, status)
			}
		})
		time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond) // a random moment to crash
		srv.kill9(t)
		stop()
		wait()
		acked, lost := ppl.counts()
		t.Logf("round %d: %d acknowledged so far, %d answers lost to the crash", round+1, acked, lost)
	}

	// Restart once more: retry every lost answer with its key until it is
	// acknowledged, let the backlog drain, then stop gracefully.
	srv := startFormd(t, bin, data, formsPath)
	ppl.resendLost(t, client, srv.url)
	acked := ppl.ackedKeys()
	poll.Until(t, "the journal backlog to drain", 30*time.Second, func() bool { return backlog(client, srv.metrics) == 0 })
	srv.stop(t)

	// Every journal entry has an outcome.
	var audit bytes.Buffer
	if code := run([]string{"audit", "--data", data}, &audit, &audit); code != 0 {
		t.Fatalf("formd audit exit %d:\n%s", code, audit.String())
	}
	// Every acknowledged key is stored exactly once, and so is every phone.
	keys := map[string]int{}
	phones := map[string]int{}
	for _, row := range exportRows[struct {
		Key    string
		Status string
		Data   struct{ Phone string }
	}](t, data, "crash") {
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

// writeForms writes the forms (YAML) to forms.yaml in dir and returns
// its path.
func writeForms(t *testing.T, dir, forms string) string {
	t.Helper()
	path := filepath.Join(dir, "forms.yaml")
	if err := os.WriteFile(path, []byte(forms), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddrs are n different loopback addresses whose ports nobody
// listens on now, for a formd started as another process to listen on.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close() // each open until all are chosen: no port twice
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
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
	addrs := freeAddrs(t, 2)
	addr, maddr := addrs[0], addrs[1]
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
	poll.UntilOK(t, "formd to answer /readyz", 20*time.Second, p.url+"/readyz")
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
