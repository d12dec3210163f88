package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/client"
)

// formdProtocol drives a formd server the way its clients do: a form of
// the run's own, people registering through the Go client (keys, retries,
// status queries), and the checker reading the export afterwards.
type formdProtocol struct {
	e *engine

	form       string
	serverBase string // the server itself, for the checker and the admin API
	token      string
	admin      *http.Client // admin API calls: the form, the export
	client     *client.Client
	// applied is set once the run's form is on the server; closed once
	// cleanUp has closed it there.
	applied, closed bool
	cleanOnce       sync.Once
}

var _ protocol = (*formdProtocol)(nil)

func (p *formdProtocol) setUp(ctx context.Context) error {
	e := p.e
	p.form = e.cfg.Form
	if p.form == "" {
		var b [3]byte
		rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail on supported systems
		p.form = "loadtest-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
	}
	p.admin = &http.Client{Timeout: time.Minute}
	if len(e.cfg.Spawn) > 0 {
		if err := p.spawn(ctx); err != nil {
			return err
		}
	} else {
		p.serverBase = strings.TrimRight(e.cfg.URL, "/")
	}
	p.token = e.cfg.AdminToken
	if p.token == "" && e.sup != nil {
		p.token = e.sup.adminToken()
	}
	if p.token == "" {
		return errors.New("no admin token to read the result with: pass --admin-token (or FORMD_ADMIN_TOKEN), or spawn the server on a fresh --data so it prints one")
	}
	// Applied through the API even when the spawned server has it from
	// --forms: that checks the token at once, and uses it, so a restart
	// does not issue another (a start issues one until the first is used).
	if err := p.applyForm(ctx); err != nil {
		return err
	}
	if err := p.waitForm(ctx); err != nil {
		return err
	}
	base := p.serverBase
	if e.cfg.Proxy || e.cfg.Faults.Any() {
		u, _ := url.Parse(p.serverBase)
		px, err := StartProxy(u.Host, e.cfg.Faults)
		if err != nil {
			return err
		}
		e.proxy = px
		base = "http://" + px.Addr()
	}
	e.transport = newTransport(e.cfg.Clients)
	c, err := client.New(base, client.Options{
		HTTPClient:     &http.Client{Transport: e.transport},
		AttemptTimeout: e.cfg.AttemptTimeout,
		Wait:           e.cfg.Wait,
		MinBackoff:     e.cfg.MinBackoff,
		MaxBackoff:     e.cfg.MaxBackoff,
		OnEvent:        e.onEvent,
		UserAgent:      "formd-loadtest",
	})
	if err != nil {
		return err
	}
	p.client = c
	return nil
}

// spawn prepares the server command (with the run's form as --forms, so
// every restart has it) and starts it.
func (p *formdProtocol) spawn(ctx context.Context) (err error) {
	e := p.e
	sp, err := prepareSpawn(e.cfg, "formd-loadtest-", "loadtest-form.yaml", loadtestForm(p.form, e.cfg.Capacity, e.cfg.WhenFull))
	if err != nil {
		return err
	}
	argv, addr := sp.argv, sp.addr
	e.workDir, e.ownWorkDir = sp.workDir, sp.ownWorkDir
	e.sup, err = newSupervisor(argv, e.cfg.SpawnEnv, addr, filepath.Join(e.workDir, "server.log"))
	if err != nil {
		return err
	}
	p.serverBase = "http://" + addr
	e.log.Info("starting the server", "command", strings.Join(argv, " "))
	if err := e.sup.start(ctx, time.Minute); err != nil {
		return err
	}
	return nil
}

// spawnCommand is a server command made ready to start: the configured
// --spawn command with --addr (a free loopback port), --data (under the
// work directory) and --forms (the run's forms, written there) added
// where it lacks them, then extra's flags where it lacks them.
type spawnCommand struct {
	argv          []string
	addr, workDir string
	// ownWorkDir says the run made the work directory (and may remove it).
	ownWorkDir bool
}

// prepareSpawn makes the spawned server's command for cfg: the work
// directory cfg names, or a new one named by prefix; the forms in
// formsFile there. The address must be on the loopback.
func prepareSpawn(cfg Config, prefix, formsFile, formsYAML string, extra ...[2]string) (spawnCommand, error) {
	sc := spawnCommand{workDir: cfg.WorkDir}
	var err error
	if sc.workDir == "" {
		if sc.workDir, err = os.MkdirTemp("", prefix); err != nil {
			return sc, fmt.Errorf("work dir: %w", err)
		}
		sc.ownWorkDir = true
	} else if err := os.MkdirAll(sc.workDir, 0o700); err != nil {
		return sc, fmt.Errorf("work dir: %w", err)
	}
	argv := append([]string(nil), cfg.Spawn...)
	addr, ok := flagValue(argv, "addr")
	if !ok {
		if addr, err = freeLoopbackAddr(); err != nil {
			return sc, err
		}
		argv = append(argv, "--addr", addr)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return sc, fmt.Errorf("--spawn: --addr %q is not host:port", addr)
	}
	if err := checkLoopbackHost(host); err != nil {
		return sc, fmt.Errorf("--spawn: %w", err)
	}
	if _, ok := flagValue(argv, "data"); !ok {
		argv = append(argv, "--data", filepath.Join(sc.workDir, "data"))
	}
	if _, ok := flagValue(argv, "forms"); !ok {
		path := filepath.Join(sc.workDir, formsFile)
		if err := os.WriteFile(path, []byte(formsYAML), 0o600); err != nil {
			return sc, fmt.Errorf("write the forms: %w", err)
		}
		argv = append(argv, "--forms", path)
	}
	for _, f := range extra {
		if _, ok := flagValue(argv, f[0]); !ok {
			argv = append(argv, "--"+f[0], f[1])
		}
	}
	sc.argv, sc.addr = argv, addr
	return sc, nil
}

// applyForm stores the run's form through the admin API.
func (p *formdProtocol) applyForm(ctx context.Context) error {
	body := loadtestForm(p.form, p.e.cfg.Capacity, p.e.cfg.WhenFull, p.sessions()...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.serverBase+"/v1/admin/forms", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := p.admin.Do(req)
	if err != nil {
		return fmt.Errorf("apply the loadtest form: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("apply the loadtest form: %s: %s", resp.Status, b)
	}
	p.applied = true
	return nil
}

// waitForm polls until the server serves the form (a server may load
// applied forms a moment later).
func (p *formdProtocol) waitForm(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.serverBase+"/v1/forms/"+url.PathEscape(p.form), nil)
		if err != nil {
			return err
		}
		resp, err := p.admin.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server does not serve form %s: %w", p.form, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// person runs one virtual person's plan to its end: a registration,
// perhaps clicked twice or followed by another under a new key, or an
// invalid one.
func (p *formdProtocol) person(ctx context.Context, i int) {
	e := p.e
	pl := makePlan(e.cfg.Seed, i, e.cfg.Shares)
	if ss := p.sessions(); len(ss) > 0 {
		pl.person.session = ss[i%len(ss)].Value
	}
	if pl.invalid {
		body := invalidBodies[i%len(invalidBodies)](pl.person)
		p.submit(ctx, e.newRecord(fmt.Sprintf("bad%d", i), i, true), body)
		return
	}
	first := e.newRecord(fmt.Sprintf("p%d", i), i, false)
	body := pl.person.body(pl.style)
	var wg sync.WaitGroup
	wg.Go(func() { p.submit(ctx, first, body) })
	if pl.doubleClick {
		wg.Go(func() { p.submit(ctx, first, body) })
	}
	if pl.reregister {
		again := e.newRecord(fmt.Sprintf("p%d-again", i), i, false)
		wg.Go(func() { p.submit(ctx, again, pl.person.again(pl.reStyle, pl.reChanged)) })
	}
	wg.Wait()
}

// submit sends one submission through the client protocol and records
// what it learned.
func (p *formdProtocol) submit(ctx context.Context, r *record, body []byte) {
	e := p.e
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	res, err := p.client.Submit(ctx, client.Submission{Form: p.form, Key: r.key, Body: body})
	if err != nil {
		var nd *client.NotDecidedError
		if !errors.As(err, &nd) {
			e.fail(fmt.Errorf("submit %s: %w", r.key, err))
			return
		}
		res = nd.Result
	}
	if res.Acknowledged {
		e.counters.acked.Add(1)
		e.ackHist.record(res.AcknowledgedAt.Sub(res.Started))
	}
	if res.Outcome != "" {
		e.counters.decided.Add(1)
		e.outcomeHist.record(res.DecidedAt.Sub(res.Started))
	}
	r.mu.Lock()
	c := call{outcome: res.Outcome, acked: res.Acknowledged, forgotten: res.Forgotten}
	if res.Doc != nil && res.Doc.Key != r.key {
		// A resend of a live entry's content is answered as that entry.
		c.answeredAs = res.Doc.Key
	}
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// report says what was run and runs the checker: the export against what
// every client was told.
func (p *formdProtocol) report(ctx context.Context, r *Report) {
	e := p.e
	r.Mode, r.Target, r.Form, r.Capacity, r.WhenFull = "formd", p.serverBase, p.form, e.cfg.Capacity, e.cfg.WhenFull
	if e.sup != nil {
		r.Target += " (spawned: " + strings.Join(e.sup.argv, " ") + ")"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rows, err := fetchExport(ctx, p.admin, p.serverBase, p.token, p.form)
	if err != nil {
		r.Errors = append(r.Errors, "checker: "+err.Error())
		return
	}
	final, err := p.finalStatuses(ctx, rows)
	if err != nil {
		r.Errors = append(r.Errors, "checker: "+err.Error())
		return
	}
	e.mu.Lock()
	records := e.records
	e.mu.Unlock()
	v := verdict(records, rows, e.cfg.Capacity, e.cfg.WhenFull, final, p.sessions()...)
	r.Verdict = &v
	r.OK = len(r.Errors) == 0 && v.Lost == 0 && v.Duplicated == 0 && v.Oversold == 0 && v.Unresolved == 0 && v.Violations == 0
}

// cleanUp closes the run's form on a server the run did not launch,
// unless KeepForm: the admin API cannot delete a form, and a closed one
// takes no more submissions while its entries stay for formd export. A
// spawned server's data is the run's own, so its form is left as it is.
// It reports whether it closed the form; it acts once, and a failure is
// logged, not the run's.
func (p *formdProtocol) cleanUp(ctx context.Context) (closed bool) {
	p.cleanOnce.Do(func() {
		e := p.e
		if !p.applied || e.sup != nil || e.cfg.KeepForm {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := p.closeForm(ctx); err != nil {
			e.log.Warn("the run's form is still open", "form", p.form, "err", err)
			return
		}
		p.closed = true
		e.log.Info("closed the run's form (formd cannot delete a form; its entries stay)", "form", p.form)
	})
	return p.closed
}

// closeForm is POST /v1/admin/forms/{form}/close.
func (p *formdProtocol) closeForm(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.serverBase+"/v1/admin/forms/"+url.PathEscape(p.form)+"/close", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.admin.Do(req)
	if err != nil {
		return fmt.Errorf("close form %s: %w", p.form, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("close form %s: %s: %s", p.form, resp.Status, b)
	}
	return nil
}

// sessions are the run's sessions (--sessions), nil without.
func (p *formdProtocol) sessions() []sessionPlaces {
	if p.e.cfg.Sessions < 2 {
		return nil
	}
	return sessionsOf(p.e.cfg.Sessions, p.e.cfg.Capacity)
}
