package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/form"
)

// The mix run (formd loadtest --mix, issue 28): in one run, the same
// closed-loop load against a plain form, a proof-of-work form and a form
// with a file field, one kind at a time in timed phases (three rounds of
// the three kinds), and the rate of each against the plain form's. What a person's device does
// before sending — solving the challenge, uploading the file — is done
// for every submission before the timed phases, so that they measure the
// server's cost of a submission of each kind, not the client's work.

// DefaultMixCount is how many submissions each phase of a mix run sends
// when Config.Count does not say.
const DefaultMixCount = 2000

// mixPowDifficulty is the proof-of-work form's difficulty: the lowest a
// form may ask, so that solving stays cheap (and outside the timing).
const mixPowDifficulty = 1000

// MixReport is the result of a mix run.
type MixReport struct {
	OK      bool        `json:"ok"`
	Target  string      `json:"target"`
	Clients int         `json:"clients"`
	Count   int         `json:"count_per_phase"`
	Phases  []MixPhase  `json:"phases"`
	Errors  []string    `json:"errors,omitempty"`
	Prep    MixPrepTime `json:"prep"`
}

// MixPrepTime is what the untimed preparation took.
type MixPrepTime struct {
	SolveS  float64 `json:"solve_s"`
	UploadS float64 `json:"upload_s"`
}

// MixPhase is one form's timed phase.
type MixPhase struct {
	Kind string `json:"kind"` // plain, pow, file
	Form string `json:"form"`
	Sent int64  `json:"sent"`
	// Decided counts the 201s (stored) and other definitive answers;
	// Accepted the 202s (journaled, not decided within the wait).
	Stored   int64   `json:"stored_201"`
	Accepted int64   `json:"accepted_202"`
	Refused  int64   `json:"refused_4xx"`
	Failed   int64   `json:"failed_5xx"`
	NoAnswer int64   `json:"no_answer"`
	WindowS  float64 `json:"window_s"`
	// RatePerS is 2xx answers a second over the phase.
	RatePerS float64 `json:"rate_per_s"`
	// RatioToPlain is RatePerS over the plain phase's.
	RatioToPlain float64 `json:"ratio_to_plain"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	// ServerCPUus and ClientCPUus are the CPU time (user + system) the
	// spawned server and this process spent over the phase's windows, a
	// submission answered 2xx: they tell a kind that costs more CPU from
	// one that waits longer. 0 when unknown (a server not spawned, no
	// /proc).
	ServerCPUus float64 `json:"server_cpu_us,omitempty"`
	ClientCPUus float64 `json:"client_cpu_us,omitempty"`
}

// mixForms are the three forms of a mix run, ids from base.
func mixForms(base string) (plain, pow, file, yaml string) {
	plain, pow, file = base+"-plain", base+"-pow", base+"-file"
	fields := `  - {name: name,  type: text,  required: true, max: 100}
  - {name: email, type: email, required: true}
`
	yaml = fmt.Sprintf(`id: %s
fields:
%srequire_key: true
rate_limit: off
---
id: %s
fields:
%srequire_key: true
rate_limit: off
spam: {challenge: pow, difficulty: %d}
---
id: %s
fields:
%s  - {name: photo, type: file, required: true, max_size: 64KiB, accept: [image/png]}
require_key: true
rate_limit: off
`, plain, fields, pow, fields, mixPowDifficulty, file, fields)
	return plain, pow, file, yaml
}

// RunMix runs the mix: Config's URL or Spawn, AdminToken, WorkDir,
// Clients, Count (per phase, default DefaultMixCount), Duration (the
// most a phase may last, default 10 minutes), Wait and AttemptTimeout
// are used; faults, shares and kills are not (IsConfigError).
func RunMix(ctx context.Context, cfg Config) (*MixReport, error) {
	if cfg.Count == 0 {
		cfg.Count = DefaultMixCount
	}
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Minute
	}
	cfg.setDefaults()
	if err := cfg.check(); err != nil {
		return nil, &configError{err}
	}
	if cfg.Plain || cfg.Faults.Any() || cfg.Proxy || cfg.Shares != (Shares{}) || cfg.KillEvery > 0 || cfg.Rate > 0 {
		return nil, &configError{errors.New("--mix measures the server alone: it takes no --plain, faults, --proxy, shares, --kill-every or --rate")}
	}
	if err := ensureFiles(uint64(cfg.Clients)*2 + 256); err != nil {
		return nil, err
	}
	m := &mixRun{cfg: cfg, hc: &http.Client{Transport: newTransport(cfg.Clients)}, admin: &http.Client{Timeout: time.Minute}}
	defer m.tearDown()
	var b [3]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail on supported systems
	base := cfg.Form
	if base == "" {
		base = "mix-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
	}
	plainForm, powForm, fileForm, yaml := mixForms(base)
	if err := m.setUp(ctx, yaml, []string{plainForm, powForm, fileForm}); err != nil {
		return nil, err
	}
	rep := &MixReport{Target: m.base, Clients: cfg.Clients, Count: cfg.Count}
	if m.sup != nil {
		rep.Target += " (spawned: " + strings.Join(m.sup.argv, " ") + ")"
	}
	// Untimed: every proof-of-work submission's solution, every file
	// submission's upload.
	t0 := time.Now()
	sols, err := m.solveAll(ctx, powForm, cfg.Count)
	if err != nil {
		return nil, err
	}
	rep.Prep.SolveS = round(time.Since(t0).Seconds(), 2)
	t0 = time.Now()
	ups, err := m.uploadAll(ctx, fileForm, cfg.Count)
	if err != nil {
		return nil, err
	}
	rep.Prep.UploadS = round(time.Since(t0).Seconds(), 2)

	kinds := []*mixAcc{
		{kind: "plain", form: plainForm},
		{kind: "pow", form: powForm, extra: func(i int) (string, any) { return form.ChallengeField, sols[i] }},
		{kind: "file", form: fileForm, extra: func(i int) (string, any) { return "photo", "upload:" + ups[i] }},
	}
	// In rounds, each kind a slice of its submissions in turn, so that
	// what drifts during the run (the files growing, other work on the
	// machine) weighs on every kind alike.
	for r := range mixRounds {
		from, to := r*cfg.Count/mixRounds, (r+1)*cfg.Count/mixRounds
		for _, k := range kinds {
			m.phase(ctx, k, from, to)
		}
	}
	for _, k := range kinds {
		p := k.result()
		rep.Phases = append(rep.Phases, p)
		if p.Failed > 0 || p.NoAnswer > 0 || p.Refused > 0 {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s phase: %d refused, %d failed, %d without an answer", p.Kind, p.Refused, p.Failed, p.NoAnswer))
		}
	}
	if plainRate := rep.Phases[0].RatePerS; plainRate > 0 {
		for i := range rep.Phases {
			rep.Phases[i].RatioToPlain = round(rep.Phases[i].RatePerS/plainRate, 3)
		}
	}
	if m.sup != nil {
		rep.Errors = append(rep.Errors, m.sup.crashed()...)
	}
	rep.OK = len(rep.Errors) == 0
	m.passed = rep.OK
	return rep, nil
}

type mixRun struct {
	cfg        Config
	hc, admin  *http.Client
	base       string
	token      string
	sup        *supervisor
	workDir    string
	ownWorkDir bool
	passed     bool
}

func (m *mixRun) setUp(ctx context.Context, yaml string, forms []string) error {
	if len(m.cfg.Spawn) > 0 {
		if err := m.spawn(ctx, yaml); err != nil {
			return err
		}
	} else {
		m.base = strings.TrimRight(m.cfg.URL, "/")
	}
	m.token = m.cfg.AdminToken
	if m.token == "" && m.sup != nil {
		m.token = m.sup.adminToken()
	}
	if m.token == "" {
		return errors.New("no admin token to apply the forms with: pass --admin-token (or FORMD_ADMIN_TOKEN), or spawn the server on a fresh --data so it prints one")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, m.base+"/v1/admin/forms", strings.NewReader(yaml))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := m.admin.Do(req)
	if err != nil {
		return fmt.Errorf("apply the mix's forms: %w", err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("apply the mix's forms: %s: %s", resp.Status, b)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, f := range forms {
		for {
			req, _ := http.NewRequestWithContext(wctx, http.MethodGet, m.base+"/v1/forms/"+f, nil)
			resp, err := m.admin.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-wctx.Done():
				return fmt.Errorf("the server does not serve form %s: %w", f, wctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// spawn starts the server with the mix's forms, and with the loopback as
// a trusted proxy (see mixRun.trusted).
func (m *mixRun) spawn(ctx context.Context, yaml string) (err error) {
	sp, err := prepareSpawn(m.cfg, "formd-loadtest-mix-", "mix-forms.yaml", yaml, [2]string{"trusted-proxies", "127.0.0.1/32"})
	if err != nil {
		return err
	}
	argv, addr := sp.argv, sp.addr
	m.workDir, m.ownWorkDir = sp.workDir, sp.ownWorkDir
	m.sup, err = newSupervisor(argv, m.cfg.SpawnEnv, addr, filepath.Join(m.workDir, "server.log"))
	if err != nil {
		return err
	}
	m.base = "http://" + addr
	m.cfg.Log.Info("starting the server", "command", strings.Join(argv, " "))
	return m.sup.start(ctx, time.Minute)
}

func (m *mixRun) tearDown() {
	m.hc.CloseIdleConnections()
	if m.sup != nil {
		m.sup.stop(30 * time.Second)
	}
	if m.ownWorkDir && m.passed {
		os.RemoveAll(m.workDir)
	}
}

// parallel runs fn(i) for i below n on as many workers as there are
// cores (or clients, for network work), stopping at the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// solveAll gets and solves n challenges of the form, each asked for as
// from an address of its own (X-Forwarded-For in 198.18.0.0/15, the
// benchmarking range), so that a server that trusts the loopback as a
// proxy (a spawned one is told to: --trusted-proxies 127.0.0.1/32) raises
// none for the burst.
func (m *mixRun) solveAll(ctx context.Context, form string, n int) ([]string, error) {
	out := make([]string, n)
	err := parallel(ctx, n, max(runtime.GOMAXPROCS(0), 4), func(ctx context.Context, i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.base+"/v1/forms/"+form+"/challenge", nil)
		if err != nil {
			return err
		}
		// Harmless where the loopback is not trusted: the difficulty then
		// rises with the burst (slower solving, before the timing).
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.18.%d.%d", (i/250)%256, i%250+1))
		resp, err := m.hc.Do(req)
		if err != nil {
			return fmt.Errorf("challenge %d: %w", i, err)
		}
		var ch challenge.Challenge
		err = json.NewDecoder(resp.Body).Decode(&ch)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("challenge %d: %s %v", i, resp.Status, err)
		}
		sol, ok := challenge.Solve(ch)
		if !ok {
			return fmt.Errorf("challenge %d: no solution up to %d", i, ch.MaxNumber)
		}
		out[i] = challenge.Encode(sol)
		return nil
	})
	return out, err
}

// mixPNG is n bytes that sniff as a PNG, different for each i.
func mixPNG(i int) []byte {
	b := make([]byte, 2048)
	copy(b, "\x89PNG\r\n\x1a\n")
	for k := 8; k < len(b); k++ {
		b[k] = byte(k*31 + i*7 + k/253)
	}
	copy(b[16:], strconv.Itoa(i))
	return b
}

// uploadAll makes n complete uploads of the file form's photo field over
// tus, each a small PNG of its own, and returns their ids.
func (m *mixRun) uploadAll(ctx context.Context, form string, n int) ([]string, error) {
	out := make([]string, n)
	meta := "field " + base64.StdEncoding.EncodeToString([]byte("photo")) + ",filename " + base64.StdEncoding.EncodeToString([]byte("photo.png"))
	err := parallel(ctx, n, min(m.cfg.Clients, 64), func(ctx context.Context, i int) error {
		body := mixPNG(i)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+"/v1/forms/"+form+"/uploads", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", strconv.Itoa(len(body)))
		req.Header.Set("Upload-Metadata", meta)
		resp, err := m.hc.Do(req)
		if err != nil {
			return fmt.Errorf("create upload %d: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status says it
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusCreated || loc == "" {
			return fmt.Errorf("create upload %d: %s", i, resp.Status)
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPatch, m.base+loc, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Offset", "0")
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		resp, err = m.hc.Do(req)
		if err != nil {
			return fmt.Errorf("send upload %d: %w", i, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("send upload %d: %s %s", i, resp.Status, msg)
		}
		out[i] = loc[strings.LastIndexByte(loc, '/')+1:]
		return nil
	})
	return out, err
}

// mixRounds is how many rounds a mix run takes each kind through.
const mixRounds = 3

// mixAcc is one kind's phases so far.
type mixAcc struct {
	kind, form string
	// extra adds the kind's member (the solution, the upload) to
	// submission i.
	extra func(i int) (string, any)

	hist                                              histogram
	stored, accepted, refused, failed, noAnswer, sent atomic.Int64
	window                                            time.Duration
	// serverCPU and clientCPU add up the processes' CPU over the windows;
	// cpuUnknown is set once a reading failed.
	serverCPU, clientCPU time.Duration
	cpuUnknown           bool
}

func (a *mixAcc) result() MixPhase {
	p := MixPhase{Kind: a.kind, Form: a.form, Sent: a.sent.Load(), Stored: a.stored.Load(), Accepted: a.accepted.Load(),
		Refused: a.refused.Load(), Failed: a.failed.Load(), NoAnswer: a.noAnswer.Load(), WindowS: round(a.window.Seconds(), 3)}
	if a.window > 0 {
		p.RatePerS = round(float64(p.Stored+p.Accepted)/a.window.Seconds(), 1)
	}
	l := a.hist.summary()
	p.P50MS, p.P99MS = l.P50, l.P99
	if n := p.Stored + p.Accepted; n > 0 && !a.cpuUnknown {
		p.ServerCPUus = round(float64(a.serverCPU.Microseconds())/float64(n), 1)
		p.ClientCPUus = round(float64(a.clientCPU.Microseconds())/float64(n), 1)
	}
	return p
}

// cpuNow reads the spawned server's and this process's CPU time; ok is
// false when either cannot be read.
func (m *mixRun) cpuNow() (server, client time.Duration, ok bool) {
	if m.sup == nil || m.sup.pid() == 0 {
		return 0, 0, false
	}
	server, err1 := processCPU(m.sup.pid())
	client, err2 := processCPU(os.Getpid())
	return server, client, err1 == nil && err2 == nil
}

// phase sends the kind's submissions from up to to from Clients
// workers, closed loop, and adds them to its measure.
func (m *mixRun) phase(ctx context.Context, a *mixAcc, from, to int) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Duration)
	defer cancel()
	wait := strconv.Itoa(max(int(m.cfg.Wait/time.Second), 1))
	s0, c0, ok0 := m.cpuNow()
	start := time.Now()
	_ = parallel(ctx, to-from, m.cfg.Clients, func(ctx context.Context, j int) error {
		i := from + j
		body := map[string]any{"name": "Person " + strconv.Itoa(i), "email": fmt.Sprintf("p%d@%s.example", i, a.kind)}
		if a.extra != nil {
			k, v := a.extra(i)
			body[k] = v
		}
		b, _ := json.Marshal(body)
		actx, acancel := context.WithTimeout(ctx, m.cfg.AttemptTimeout)
		defer acancel()
		req, err := http.NewRequestWithContext(actx, http.MethodPost, m.base+"/v1/forms/"+a.form+"/submissions", bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", a.kind+"-"+strconv.Itoa(i))
		req.Header.Set("Prefer", "wait="+wait)
		t := time.Now()
		a.sent.Add(1)
		resp, err := m.hc.Do(req)
		if err != nil {
			a.noAnswer.Add(1)
			return nil
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status says it
		resp.Body.Close()
		switch s := resp.StatusCode; {
		case s == http.StatusCreated || s == http.StatusOK:
			a.stored.Add(1)
			a.hist.record(time.Since(t))
		case s == http.StatusAccepted:
			a.accepted.Add(1)
			a.hist.record(time.Since(t))
		case s >= 500:
			a.failed.Add(1)
		default:
			a.refused.Add(1)
		}
		return nil
	})
	a.window += time.Since(start)
	s1, c1, ok1 := m.cpuNow()
	if !ok0 || !ok1 {
		a.cpuUnknown = true
	}
	a.serverCPU += s1 - s0
	a.clientCPU += c1 - c0
}

// WriteText prints the mix's report.
func (r *MixReport) WriteText(w io.Writer) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pf("formd loadtest (mix): %s clients, %s submissions a phase\n", commas(int64(r.Clients)), commas(int64(r.Count)))
	pf("  target       %s\n", r.Target)
	pf("  untimed      solving %gs, uploading %gs\n", r.Prep.SolveS, r.Prep.UploadS)
	pf("  %-6s %-10s %-10s %-8s %-8s %-8s %-8s %-8s %-8s %-12s %s\n", "phase", "rate/s", "vs plain", "201", "202", "4xx", "5xx", "p50 ms", "p99 ms", "server µs", "client µs")
	for _, p := range r.Phases {
		cpu := func(us float64) string {
			if us == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", us)
		}
		pf("  %-6s %-10.1f %-10.3f %-8d %-8d %-8d %-8d %-8.1f %-8.1f %-12s %s\n", p.Kind, p.RatePerS, p.RatioToPlain, p.Stored, p.Accepted, p.Refused, p.Failed+p.NoAnswer, p.P50MS, p.P99MS, cpu(p.ServerCPUus), cpu(p.ClientCPUus))
	}
	if len(r.Phases) > 0 && r.Phases[0].ServerCPUus > 0 {
		pf("  (server µs, client µs: CPU time of the spawned server and of this process a submission answered, over the phase's windows)\n")
	}
	for _, e := range r.Errors {
		pf("  error: %s\n", e)
	}
	if r.OK {
		pf("OK\n")
	} else {
		pf("FAILED\n")
	}
}
