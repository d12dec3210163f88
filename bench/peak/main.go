// Command peak is the realistic-peak benchmark of BENCHMARKS.md §7 (issue
// 18): the §1 intake load (wrk, 2 threads, -conns keep-alive connections,
// a new person per request) against formd in two configurations,
// alternating over -rounds rounds on copies of one data directory that
// holds -old entries of a second form:
//
//   - bare: nothing but intake;
//   - full: two webhook endpoints and an e-mail confirmation per entry
//     (to a receiver and an SMTP server in this process), an SDK arrival
//     report (a beacon with the started and answered events) for every
//     answered submission, the console's submissions page fetched every
//     2 s, and a retention pass that erases the -old entries, starting in
//     the middle of the peak (--retention-every).
//
// For each it reports intake (201s a second), wrk's p50 and p99, the
// server's CPU time per submission (from /proc), and for full the time
// from the end of the peak until the outbox has delivered every entry's
// webhooks and confirmation, and the retention pass: when it started and
// ended relative to the peak, and whether it completed (every old entry
// erased, no "retention pass failed" in the log).
//
// Usage:
//
//	go build -o /tmp/formd ./cmd/formd
//	go run ./bench/peak -formd /tmp/formd -rounds 3 -duration 20s
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/formd/formd/bench/proc"
	"github.com/formd/formd/internal/loop"
)

func main() {
	bin := flag.String("formd", "", "the formd binary to run (required)")
	rounds := flag.Int("rounds", 3, "rounds; each runs both configurations")
	duration := flag.Duration("duration", 20*time.Second, "how long the measured wrk run sends")
	conns := flag.Int("conns", 500, "wrk connections")
	old := flag.Int("old", 200000, "old entries the retention pass erases")
	drain := flag.Duration("drain", 6*time.Minute, "how long to wait for the outbox to drain")
	templateDir := flag.String("template", "", "a data directory already holding the -old entries (a copy of one an earlier run loaded); empty: load them")
	flag.StringVar(&profileDir, "pprof", "", "a directory: take a CPU profile of formd during each measured run, saved there as MODE-ROUND.pprof")
	flag.Parse()
	if *bin == "" {
		log.Fatal("-formd is required: the path of a built formd binary (go build -o /tmp/formd ./cmd/formd)")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		log.Fatal("wrk is not installed (apt-get install -y wrk)")
	}
	env := newEnvironment()
	work, err := os.MkdirTemp("", "formd-peak-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	template := *templateDir
	start := time.Now()
	if template == "" {
		template = filepath.Join(work, "template")
		if err := preload(*bin, template, *old); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("# %s, %d cores, load average %s; %d old entries loaded in %.0fs; %d rounds of %s at %d connections\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), proc.LoadAvg(), *old, time.Since(start).Seconds(), *rounds, *duration, *conns)
	var results []result
	for r := 1; r <= *rounds; r++ {
		for _, mode := range []string{"bare", "full"} {
			res, err := runMode(*bin, mode, r, template, work, env, *duration, *conns, *old, *drain)
			if err != nil {
				log.Fatalf("round %d, %s: %v", r, mode, err)
			}
			fmt.Println(res)
			results = append(results, res)
		}
	}
	summarize(results, *duration)
}

// profileDir, when set, receives CPU profiles of the measured runs.
var profileDir string

const benchForm = `id: bench
fields:
  - {name: name,    type: text,   required: true, max: 100}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: tickets, type: number, min: 1, max: 4, integer: true}
  - {name: email,   type: email}
unique: [[phone]]
rate_limit: off
`

const fullNotify = `notify:
  webhooks:
    - {url: "%[1]s/a", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
    - {url: "%[1]s/b", secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"}
  email: {confirm: email}
`

const archiveForm = `---
id: archive
fields:
  - {name: name, type: text, required: true, max: 100}
rate_limit: off
`

// environment is what the full configuration talks to: a webhook
// receiver and an SMTP server, both answering at once.
type environment struct {
	hookURL  string
	smtpPort int
	hooks    atomic.Int64
	mails    atomic.Int64
	sessions atomic.Int64 // SMTP sessions opened (formd pools them: many mails a session)
	last     atomic.Int64 // unix nanos of the latest delivery of either kind
}

func newEnvironment() *environment {
	env := &environment{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	env.hookURL = "http://" + ln.Addr().String()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { //nolint:errcheck // until the process ends
		io.Copy(io.Discard, r.Body) //nolint:errcheck // only the answer matters
		env.hooks.Add(1)
		env.last.Store(time.Now().UnixNano())
		w.WriteHeader(http.StatusNoContent)
	}))
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		env.sessions.Add(1)
		return &sink{env: env}, nil
	}))
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	env.smtpPort = sl.Addr().(*net.TCPAddr).Port
	go s.Serve(sl) //nolint:errcheck // until the process ends
	return env
}

type sink struct{ env *environment }

func (s *sink) Mail(string, *smtp.MailOptions) error { return nil }
func (s *sink) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *sink) Data(r io.Reader) error {
	io.Copy(io.Discard, r) //nolint:errcheck // only the count matters
	s.env.mails.Add(1)
	s.env.last.Store(time.Now().UnixNano())
	return nil
}
func (s *sink) Reset()        {}
func (s *sink) Logout() error { return nil }

// preload makes the template data directory: old entries of the archive
// form, sent through formd itself.
func preload(bin, data string, n int) error {
	dir := filepath.Dir(data)
	formsFile := filepath.Join(dir, "preload.yaml")
	if err := os.WriteFile(formsFile, []byte(benchForm+archiveForm), 0o600); err != nil {
		return err
	}
	f, err := startFormd(bin, []string{"serve", "--data", data, "--forms", formsFile, "--log-level", "warn"}, filepath.Join(dir, "preload.log"))
	if err != nil {
		return err
	}
	defer f.stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				req, _ := http.NewRequest("POST", f.base+"/v1/forms/archive/submissions", strings.NewReader(fmt.Sprintf(`{"name":"Old person %d"}`, i)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprint("old-", i))
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status says it
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if k := failed.Load(); k > 0 {
		return fmt.Errorf("preload: %d of %d old entries not stored", k, n)
	}
	return nil
}

type formd struct {
	launched time.Time
	cmd      *exec.Cmd
	base     string
	metrics  string // where /metrics is served (--metrics-addr): not the public address
	logPath  string
}

func startFormd(bin string, args []string, logPath string) (*formd, error) {
	port, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	mport, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	maddr := fmt.Sprintf("127.0.0.1:%d", mport)
	cmd := exec.Command(bin, append(args, "--addr", addr, "--metrics-addr", maddr)...)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	launched := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	logf.Close()
	f := &formd{launched: launched, cmd: cmd, base: "http://" + addr, metrics: "http://" + maddr, logPath: logPath}
	if err := proc.WaitReady(f.base+"/readyz", 60*time.Second); err != nil {
		f.stop()
		b, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%w\n%s", err, b)
	}
	return f, nil
}

func (f *formd) stop() {
	f.cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may be gone
	f.cmd.Wait()                       //nolint:errcheck // its exit status does not matter here
}

type result struct {
	round                                 int
	mode                                  string
	accepted, warm                        int64
	intake, p50, p99, cpuUS               float64
	statuses                              string
	drain                                 time.Duration
	drained                               bool
	retentionStart, retention             time.Duration // from the start of the peak; its length
	erased                                int64
	retentionFailed                       bool
	beacons, beaconsRefused, beaconErrors int64
	mailsSkipped                          int64 // confirmations over the form's budget, skipped
	pages                                 int
	pageP50, pageMax                      time.Duration
}

func (r result) String() string {
	s := fmt.Sprintf("round %d  %-4s  intake %7.0f/s  p50 %6.1f ms  p99 %6.1f ms  cpu %6.1f µs/sub  (%s)", r.round, r.mode, r.intake, r.p50, r.p99, r.cpuUS, r.statuses)
	if r.mode == "full" {
		s += fmt.Sprintf("\n            drained %.1fs after the peak (%v); retention from %.1fs for %.1fs, erased %d, failed %v; %d beacons (%d over the form's budget, %d errors or dropped); %d console pages, p50 %.0f ms, max %.0f ms",
			r.drain.Seconds(), r.drained, r.retentionStart.Seconds(), r.retention.Seconds(), r.erased, r.retentionFailed,
			r.beacons, r.beaconsRefused, r.beaconErrors, r.pages, ms(r.pageP50), ms(r.pageMax))
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

const warmup = 3 * time.Second

func runMode(bin, mode string, round int, template, work string, env *environment, dur time.Duration, conns, old int, drain time.Duration) (result, error) {
	res := result{round: round, mode: mode}
	dir := filepath.Join(work, fmt.Sprintf("%s-%d", mode, round))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("cp", "-a", template, data).CombinedOutput(); err != nil {
		return res, fmt.Errorf("copy the data: %v: %s", err, out)
	}
	def := benchForm
	archive := archiveForm
	args := []string{"serve", "--data", data, "--log-level", "warn", "--webhook-allow", "127.0.0.0/8"}
	// The retention pass starts in the middle of the peak: the ticker
	// starts with the server, a warm-up before the peak.
	retentionEvery := warmup + dur/2
	if mode == "full" {
		def += fmt.Sprintf(fullNotify, env.hookURL)
		archive += "retention: 1s\n"
		args = append(args, "--smtp", fmt.Sprintf("smtp://127.0.0.1:%d", env.smtpPort), "--smtp-from", "fair@example.org",
			"--retention-every", retentionEvery.String(), "--trusted-proxies", "127.0.0.0/8")
	}
	formsFile := filepath.Join(dir, "forms.yaml")
	if err := os.WriteFile(formsFile, []byte(def+archive), 0o600); err != nil {
		return res, err
	}
	var debugAddr string
	if profileDir != "" {
		p, err := proc.FreePort()
		if err != nil {
			return res, err
		}
		debugAddr = fmt.Sprintf("127.0.0.1:%d", p)
		args = append(args, "--debug-addr", debugAddr)
	}
	f, err := startFormd(bin, append(args, "--forms", formsFile), filepath.Join(dir, "formd.log"))
	if err != nil {
		return res, err
	}
	defer f.stop()
	url := f.base + "/v1/forms/bench/submissions"
	warm, err := runWrk(url, conns, warmup, 0)
	if err != nil {
		return res, err
	}
	res.warm = warm.created

	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	var beacons, beaconsRefused, beaconErrors atomic.Int64
	var pages []time.Duration
	var retention retentionWatch
	peakStart := time.Now()
	if mode == "full" {
		token, err := adminToken(f.logPath)
		if err != nil {
			// The data directory is a copy of the template, whose first
			// start (the preload) printed the token: make a new one.
			token, err = newAdminToken(bin, data)
		}
		if err != nil {
			cancel()
			return res, err
		}
		bg.Go(func() { reportArrivals(ctx, f.base, f.metrics, &beacons, &beaconsRefused, &beaconErrors) })
		bg.Go(func() { pages = refreshConsole(ctx, f.base, token) })
		bg.Go(func() { retention.watch(ctx, f.metrics, int64(old)) })
	}
	profiled := make(chan error, 1)
	if debugAddr != "" {
		go func() {
			profiled <- proc.Profile(debugAddr, min(dur-2*time.Second, 15*time.Second), filepath.Join(profileDir, fmt.Sprintf("%s-%d.pprof", mode, round)))
		}()
	} else {
		profiled <- nil
	}
	cpu0 := proc.CPUTicks(f.cmd.Process.Pid)
	w, err := runWrk(url, conns, dur, 1)
	cpu1 := proc.CPUTicks(f.cmd.Process.Pid)
	peakEnd := time.Now()
	if err != nil {
		cancel()
		bg.Wait()
		return res, err
	}
	if err := <-profiled; err != nil {
		log.Printf("profile: %v", err)
	}
	res.accepted, res.statuses, res.p50, res.p99 = w.created, w.statuses, w.p50, w.p99
	res.intake = float64(w.created) / w.seconds
	if w.created > 0 {
		res.cpuUS = float64(cpu1-cpu0) / proc.ClkTck * 1e6 / float64(w.created)
	}
	if mode == "full" {
		// The outbox drains: every entry's two webhooks and confirmation,
		// warm-up included.
		total := res.accepted + res.warm
		// Confirmations over the form's budget (outbox.ConfirmBudget: 600
		// a form a minute) are skipped, with the reason, not sent: they
		// count as done.
		skipped := func() int64 {
			return metric(f.metrics, "formd_deliveries_total", `kind="email"`, `outcome="skipped"`) // formd started for this run: warm-up included
		}
		mailsDone := func() bool { return env.mails.Load() >= total || env.mails.Load()+skipped() >= total }
		deadline := time.Now().Add(drain)
		for time.Now().Before(deadline) && (env.hooks.Load() < 2*total || !mailsDone()) {
			time.Sleep(100 * time.Millisecond)
		}
		res.drained = env.hooks.Load() >= 2*total && mailsDone()
		res.mailsSkipped = skipped()
		res.drain = max(0, time.Unix(0, env.last.Load()).Sub(peakEnd))
		if !res.drained {
			res.drain = time.Since(peakEnd)
			log.Printf("round %d: not drained in %s: %d of %d webhooks, %d of %d mails", round, drain, env.hooks.Load(), 2*total, env.mails.Load(), total)
		}
		// Let the retention pass finish if it has not.
		for time.Now().Before(deadline) && retention.erased() < int64(old) {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		bg.Wait()
		res.beacons, res.beaconsRefused, res.beaconErrors = beacons.Load(), beaconsRefused.Load(), beaconErrors.Load()
		res.pages = len(pages)
		if len(pages) > 0 {
			slices.Sort(pages)
			res.pageP50, res.pageMax = pages[len(pages)/2], pages[len(pages)-1]
		}
		res.erased = retention.erased()
		// The pass starts on the retention ticker (it counts what it erased
		// when a form's pass ends): retentionEvery after the launch.
		begun := f.launched.Add(retentionEvery)
		res.retentionStart = begun.Sub(peakStart)
		if e := retention.done(); !e.IsZero() {
			res.retention = e.Sub(begun)
		}
		logText, _ := os.ReadFile(f.logPath)
		res.retentionFailed = bytes.Contains(logText, []byte("retention pass failed")) || res.erased < int64(old)
		log.Printf("round %d: %d mails over %d SMTP sessions, %d confirmations skipped over the budget", round, env.mails.Load(), env.sessions.Load(), res.mailsSkipped)
		// The next round starts a new formd on fresh data: what this one
		// received (a webhook delivered again, confirmations skipped
		// rather than sent) must not carry over into its counts.
		env.hooks.Store(0)
		env.mails.Store(0)
		env.sessions.Store(0)
	}
	cancel()
	bg.Wait()
	return res, nil
}

type wrkResult struct {
	created  int64
	seconds  float64
	p50, p99 float64
	statuses string
}

var (
	reStatuses = regexp.MustCompile(`(?m)^statuses: (.*)$`)
	reP50      = regexp.MustCompile(`(?m)^p50_ms: ([0-9.]+)`)
	reP99      = regexp.MustCompile(`(?m)^p99_ms: ([0-9.]+)`)
	reCreated  = regexp.MustCompile(`\b201=([0-9]+)`)
	reTime     = regexp.MustCompile(`requests in ([0-9.]+)(m?s)`)
)

func runWrk(url string, conns int, d time.Duration, slot int) (wrkResult, error) {
	cmd := exec.Command("wrk", "-t2", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "--timeout", "10s",
		"-s", "bench/peak/peak.lua", url, "--", strconv.Itoa(slot))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	var r wrkResult
	if m := reStatuses.FindSubmatch(out); m != nil {
		r.statuses = string(m[1])
	}
	if m := reCreated.FindSubmatch([]byte(r.statuses)); m != nil {
		r.created, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := reP50.FindSubmatch(out); m != nil {
		r.p50, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := reP99.FindSubmatch(out); m != nil {
		r.p99, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	r.seconds = d.Seconds()
	if m := reTime.FindSubmatch(out); m != nil {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		if string(m[2]) == "ms" {
			v /= 1000
		}
		if string(m[2]) == "m" {
			v *= 60
		}
		r.seconds = v
	}
	return r, nil
}

// newAdminToken makes a new admin API token for the data directory
// (formd token), which formd serving on it takes at once.
func newAdminToken(bin, data string) (string, error) {
	out, err := exec.Command(bin, "token", "--data", data, "--log-level", "warn").Output()
	if err != nil {
		return "", fmt.Errorf("formd token: %w", err)
	}
	t := strings.TrimSpace(string(out))
	if t == "" || strings.ContainsAny(t, " \n") {
		return "", fmt.Errorf("formd token printed %q, not one token", out)
	}
	return t, nil
}

// adminToken reads the admin API token formd printed on its first start.
func adminToken(logPath string) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	next := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "the admin API token") {
			next = true
			continue
		}
		if t := strings.TrimSpace(line); next && t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("no admin token in %s", logPath)
}

// reportArrivals sends the SDK's beacon — started and answered — for
// every submission formd answered, as the SDK does after each answer.
func reportArrivals(ctx context.Context, base, metricsBase string, sent, refused, failed *atomic.Int64) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 10 * time.Second}
	jobs := make(chan int64, 1<<16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for n := range jobs {
				now := time.Now().UnixMilli()
				// A key shaped as the SDK's (a random UUID v4), from the
				// hosted page (this server's Origin), from one of 4,096
				// addresses (formd trusts the benchmark as a proxy): the
				// budgets per address and per form apply as to a crowd.
				key := sdkKey()
				body := fmt.Sprintf(`{"events":[{"key":%q,"type":"started","at":%d},{"key":%q,"type":"answered","at":%d,"state":"received"}]}`, key, now-20, key, now)
				req, _ := http.NewRequest("POST", base+"/v1/forms/bench/arrivals", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", base)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0x0f, n&0xff))
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status says it
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					// Over the form's arrival budget (20,000 events, then
					// 200 a second): formd sheds a flood of reports by
					// design, as it skips confirmations over theirs.
					refused.Add(1)
					continue
				}
				if resp.StatusCode != http.StatusAccepted {
					failed.Add(1)
					continue
				}
				sent.Add(1)
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	start := answers(metricsBase)
	var queued int64
	loop.Every(ctx, time.Second, func() {
		n := answers(metricsBase) - start
		for ; queued < n; queued++ {
			select {
			case jobs <- queued:
			default: // behind: the reports are dropped, as a device's may be
				failed.Add(1)
			}
		}
	})
}

// sdkKey is a random UUID v4 in lower case, as the SDK makes its keys.
func sdkKey() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// answers counts the submissions formd answered 201 (the beacons are
// answered 202).
func answers(base string) int64 {
	return metric(base, "formd_intake_answers_total", `status="201"`)
}

// metric sums a metric's lines that contain every one of match.
func metric(base, name string, match ...string) int64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		if !all(match, func(m string) bool { return strings.Contains(line, m) }) {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		sum += v
	}
	return int64(sum)
}

// refreshConsole fetches the console's submissions page every 2 s, as an
// owner watching the peak would, and returns how long each took.
func refreshConsole(ctx context.Context, base, token string) []time.Duration {
	var out []time.Duration
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/admin/forms/bench/submissions", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the time matters
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Printf("console page: %s", resp.Status)
			continue
		}
		out = append(out, time.Since(start))
	}
}

// retentionWatch follows formd_retention_erased_total: when the pass had
// erased every old entry.
type retentionWatch struct {
	mu          sync.Mutex
	end         time.Time
	erasedCount int64
}

func (rw *retentionWatch) watch(ctx context.Context, base string, want int64) {
	loop.Every(ctx, time.Second, func() {
		n := metric(base, "formd_retention_erased_total")
		now := time.Now()
		rw.mu.Lock()
		if n >= want && rw.end.IsZero() {
			rw.end = now
		}
		rw.erasedCount = n
		rw.mu.Unlock()
	})
}

func (rw *retentionWatch) erased() int64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.erasedCount
}

func (rw *retentionWatch) done() time.Time {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.end
}

func summarize(rs []result, dur time.Duration) {
	med := func(mode string, f func(result) float64) float64 {
		return proc.Median(rs, func(r result) bool { return r.mode == mode }, f)
	}
	var ratios, p99s []float64
	for _, f := range rs {
		if f.mode != "full" {
			continue
		}
		for _, b := range rs {
			if b.mode == "bare" && b.round == f.round && b.intake > 0 && b.p99 > 0 {
				ratios = append(ratios, f.intake/b.intake)
				p99s = append(p99s, f.p99/b.p99)
			}
		}
	}
	fmt.Println()
	fmt.Println("| configuration | intake/s (median) | p50 ms | p99 ms | server CPU µs/submission | outbox drained after the peak | retention pass |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---|")
	for _, mode := range []string{"bare", "full"} {
		drain, ret := "", ""
		if mode == "full" {
			drain = fmt.Sprintf("%.1f s (%.1f× the peak)", med(mode, func(r result) float64 { return r.drain.Seconds() }), med(mode, func(r result) float64 { return r.drain.Seconds() })/dur.Seconds())
			failed := 0
			for _, r := range rs {
				if r.mode == "full" && r.retentionFailed {
					failed++
				}
			}
			ret = fmt.Sprintf("from %.1f s into the peak, %.1f s long; %d of %d passes incomplete or failed",
				med(mode, func(r result) float64 { return r.retentionStart.Seconds() }), med(mode, func(r result) float64 { return r.retention.Seconds() }), failed, len(ratios))
		}
		fmt.Printf("| %s | %.0f | %.1f | %.1f | %.1f | %s | %s |\n", mode,
			med(mode, func(r result) float64 { return r.intake }), med(mode, func(r result) float64 { return r.p50 }),
			med(mode, func(r result) float64 { return r.p99 }), med(mode, func(r result) float64 { return r.cpuUS }), drain, ret)
	}
	slices.Sort(ratios)
	slices.Sort(p99s)
	if len(ratios) > 0 {
		fmt.Printf("\nintake full / bare per round: %s (median %.2f); p99 full / bare: %s (median %.2f)\n",
			proc.List(ratios), ratios[len(ratios)/2], proc.List(p99s), p99s[len(p99s)/2])
	}
}

func all(v []string, f func(string) bool) bool {
	for _, x := range v {
		if !f(x) {
			return false
		}
	}
	return true
}
