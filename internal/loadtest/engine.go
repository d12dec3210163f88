// Package loadtest is formd's benchmark and exactly-once chaos check
// (formd loadtest): virtual clients that register distinct people through
// the Go client (formd's client protocol), optional faults injected by a
// loopback proxy, an optional server that the run launches and kills with
// SIGKILL, and a checker that reads what the server stored and reports
// what was lost, duplicated or oversold, with throughput and latency.
//
// Everything stays on the machine: the target must be a loopback address,
// and a run is bounded by its duration (or count) plus a grace period.
package loadtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/client"
)

// Limits that keep a run bounded.
const (
	MaxClients  = 20_000
	MaxDuration = time.Hour
	MaxGrace    = 10 * time.Minute
	MaxRate     = 1_000_000
)

// Config is one run. Run documents the defaults that the zero values take.
type Config struct {
	// URL is the target. In formd mode, the server's base URL (unless
	// Spawn is set); in plain mode, the URL every payload is POSTed to.
	// Either way it must be a loopback address.
	URL string
	// Plain drives a server that does not speak formd's protocol (the
	// decode ceiling, PocketBase): one POST per person, no key, no retry,
	// and no checker; a 2xx answer counts as a success.
	Plain bool
	// Spawn is a server command (formd serve …) that the run launches;
	// --addr, --data and --forms are added when it lacks them.
	Spawn []string
	// SpawnEnv is the spawned server's environment (default: this one's).
	SpawnEnv []string
	// KillEvery, with Spawn, kills the server with SIGKILL this often
	// during the load phase and starts it again.
	KillEvery time.Duration
	// ServerPID, when set, is the server's process, whose CPU time during
	// the load phase the report shows (Linux). A spawned server is
	// measured without it, unless it is killed during the run.
	ServerPID int
	// AdminToken reads the export (and applies the form to a server that
	// was not spawned). A spawned server on fresh data prints its own.
	AdminToken string
	// WorkDir holds a spawned server's data, forms file and log. Default:
	// a new temporary directory, removed after a passing run and kept
	// after a failing one.
	WorkDir string
	// KeepForm leaves the run's form open on a server the run did not
	// spawn (--url). By default the run closes it at the end: the admin
	// API has no way to delete a form, and a closed one takes no more
	// submissions while its entries stay for formd export.
	KeepForm bool

	// Clients is the number of virtual clients. Default 3,000.
	Clients int
	// Duration is the load phase. Default 30s without Count; with Count,
	// 10 minutes at most.
	Duration time.Duration
	// Count, when set, ends the load phase after that many people.
	Count int
	// Rate, when set, starts people at this many a second (open loop,
	// with at most Clients at once; an arrival that finds every client
	// busy is counted as skipped). Zero: closed loop, each client starts
	// the next person as soon as its last one is decided.
	Rate float64
	// Shares are the double clicks, re-registrations and invalid inputs.
	Shares Shares
	// Capacity and WhenFull shape the run's form. Defaults 1,000 and
	// waitlist.
	Capacity int
	WhenFull string
	// Sessions, when 2 or more, gives the run's form a select field
	// "session" of that many options sharing Capacity as places of their
	// own (and no form capacity): the per-option decision under load.
	Sessions int
	// Form is the form id. Default: loadtest-<time>-<random>, new for
	// each run so that runs never mix.
	Form string
	// Seed picks who double-clicks, re-registers or sends invalid input.
	Seed uint64

	// Faults are injected by the loopback proxy; the proxy is used when
	// any is set, or when Proxy is true.
	Faults Faults
	Proxy  bool

	// AttemptTimeout, Wait, MinBackoff and MaxBackoff tune the client
	// (client.Options). Defaults 10s, 5s, 100ms and 5s.
	AttemptTimeout, Wait, MinBackoff, MaxBackoff time.Duration
	// Grace is how long submissions still undecided at the end of the
	// load phase may go on before they count as unresolved. Default 30s.
	Grace time.Duration

	// Progress, when set, gets progress while the run goes: with
	// ProgressLive, one line rewritten in place every second (for a
	// terminal); otherwise a plain line every few seconds (for a log).
	Progress     io.Writer
	ProgressLive bool
	// Log gets what the run does (server starts, kills). Default: discard.
	Log *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Clients == 0 {
		c.Clients = 3000
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
		if c.Count > 0 {
			c.Duration = 10 * time.Minute
		}
	}
	if c.Capacity == 0 {
		c.Capacity = 1000
	}
	if c.WhenFull == "" {
		c.WhenFull = "waitlist"
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 10 * time.Second
	}
	if c.Wait == 0 {
		c.Wait = 5 * time.Second
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Grace == 0 {
		c.Grace = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.SpawnEnv == nil {
		c.SpawnEnv = os.Environ()
	}
}

func (c *Config) check() error {
	switch {
	case c.Clients < 1 || c.Clients > MaxClients:
		return fmt.Errorf("--clients %d: want 1 to %d", c.Clients, MaxClients)
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return fmt.Errorf("--duration %s: want more than 0 and at most %s", c.Duration, MaxDuration)
	case c.Count < 0 || c.Count > MaxPeople:
		return fmt.Errorf("--count %d: want 0 (no limit but the duration) to %d", c.Count, MaxPeople)
	case c.Rate < 0 || c.Rate > MaxRate:
		return fmt.Errorf("--rate %g: want 0 (closed loop) to %d a second", c.Rate, MaxRate)
	case c.Grace < 0 || c.Grace > MaxGrace:
		return fmt.Errorf("--grace %s: want 0 to %s", c.Grace, MaxGrace)
	case c.Capacity < 1:
		return fmt.Errorf("--capacity %d: want at least 1", c.Capacity)
	case c.Sessions < 0 || c.Sessions == 1 || c.Sessions > 50 || c.Sessions > c.Capacity:
		return fmt.Errorf("--sessions %d: want 0 (none), or 2 to 50 and at most --capacity", c.Sessions)
	case c.WhenFull != "waitlist" && c.WhenFull != "reject":
		return fmt.Errorf("--when-full %q: want waitlist or reject", c.WhenFull)
	case c.KillEvery < 0 || c.KillEvery > 0 && len(c.Spawn) == 0:
		return errors.New("--kill-every needs --spawn: the run can only kill a server it launched")
	case c.KillEvery > 0 && c.KillEvery < 200*time.Millisecond:
		return fmt.Errorf("--kill-every %s: want at least 200ms, so the server can start between kills", c.KillEvery)
	case c.Wait >= c.AttemptTimeout:
		return fmt.Errorf("--wait %s must be shorter than --timeout %s, or every answer would time out", c.Wait, c.AttemptTimeout)
	}
	for _, s := range []struct {
		name string
		v    float64
	}{{"double-click", c.Shares.DoubleClick}, {"reregister", c.Shares.Reregister}, {"invalid", c.Shares.Invalid}} {
		if s.v < 0 || s.v > 1 {
			return fmt.Errorf("--%s %g: want a share from 0 to 1", s.name, s.v)
		}
	}
	if err := c.Faults.check(); err != nil {
		return err
	}
	if c.Plain {
		if len(c.Spawn) > 0 || c.Faults.Any() || c.Shares != (Shares{}) {
			return errors.New("--plain measures a plain HTTP endpoint: it takes no --spawn, faults or shares (they need formd's protocol and checker)")
		}
		if c.URL == "" {
			return errors.New("--plain needs --url, the endpoint to POST to")
		}
	}
	if len(c.Spawn) == 0 && c.URL == "" {
		return errors.New("say where the server is: --url http://127.0.0.1:PORT, or --spawn \"formd serve …\"")
	}
	if len(c.Spawn) > 0 && c.URL != "" {
		return errors.New("--url and --spawn are exclusive: a spawned server's address comes from its --addr")
	}
	if c.URL != "" {
		if err := checkLoopbackURL(c.URL); err != nil {
			return err
		}
	}
	return nil
}

// checkLoopbackURL refuses any target that is not this machine: a load
// test is never pointed at someone else's server.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("--url %q: want http:// (the loopback needs no TLS)", raw)
	}
	return checkLoopbackHost(u.Hostname())
}

func checkLoopbackHost(host string) error {
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("target host %q is not a loopback address (127.0.0.0/8, ::1, localhost): formd loadtest only loads this machine", host)
	}
	return nil
}

// configError is a Config that Run refuses before doing anything.
type configError struct{ error }

func (e *configError) Unwrap() error { return e.error }

// IsConfigError reports whether Run refused its Config (a usage error).
func IsConfigError(err error) bool {
	var ce *configError
	return errors.As(err, &ce)
}

// Run runs one load test and checks its result. The error is for a run
// that could not be carried out; a run that found lost, duplicated or
// oversold entries returns a Report whose OK is false.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.check(); err != nil {
		return nil, &configError{err}
	}
	// Each virtual client may hold two connections (a double click, a
	// re-registration), and the proxy two more for each of those.
	need := uint64(cfg.Clients)*2 + 256
	if cfg.Proxy || cfg.Faults.Any() {
		need += uint64(cfg.Clients) * 4
	}
	if err := ensureFiles(need); err != nil {
		return nil, err
	}
	e := &engine{cfg: cfg, log: cfg.Log}
	if cfg.Plain {
		e.proto = &plainProtocol{e: e}
	} else {
		e.proto = &formdProtocol{e: e}
	}
	defer e.tearDown(ctx)
	if err := e.proto.setUp(ctx); err != nil {
		return nil, err
	}
	e.load(ctx)
	rep := e.report(ctx)
	rep.FormClosed = e.proto.cleanUp(ctx)
	e.passed = rep.OK
	if !rep.OK && e.ownWorkDir {
		rep.WorkDir = e.workDir
	}
	return rep, nil
}

// protocol is how the virtual people reach the target, chosen once by
// Run from Config.Plain: formd's client protocol with the checker after
// the load (formdProtocol), or one plain POST each and no checker
// (plainProtocol). The load phase, counters, progress and the rest of the
// report are the engine's, the same for both.
type protocol interface {
	// setUp readies the target and the clients before the load phase.
	setUp(ctx context.Context) error
	// person runs the plan of person i to its end.
	person(ctx context.Context, i int)
	// report says what was run and fills in the verdict and OK, once the
	// load is over.
	report(ctx context.Context, r *Report)
	// cleanUp undoes what setUp left on a server the run does not own,
	// once (it is called again on the way out), and says whether it
	// closed the run's form.
	cleanUp(ctx context.Context) (formClosed bool)
}

// engine is one run in progress.
type engine struct {
	cfg   Config
	log   *slog.Logger
	proto protocol

	workDir    string
	ownWorkDir bool
	sup        *supervisor // a spawned server
	proxy      *Proxy
	transport  *http.Transport
	passed     bool

	started, loadEnded, finished time.Time
	cpuAtStart, cpuAtLoadEnd     time.Duration
	cpuErr                       error
	kills                        atomic.Int64
	fatal                        atomic.Pointer[error]

	mu      sync.Mutex
	records []*record

	people, skipped, inFlight atomic.Int64
	ackHist, outcomeHist      histogram
	counters                  counters
	atLoadEnd                 counters // a snapshot, for the throughput of a timed run
}

// counters are the live numbers.
type counters struct {
	acked, decided, posts, queries, retries, netErrors, timeouts atomic.Int64
	answers2xx, answers4xx, answers429, answers503, answers5xx   atomic.Int64
}

func (c *counters) snapshotInto(dst *counters) {
	for _, p := range [][2]*atomic.Int64{
		{&c.acked, &dst.acked}, {&c.decided, &dst.decided}, {&c.posts, &dst.posts}, {&c.queries, &dst.queries},
		{&c.retries, &dst.retries}, {&c.netErrors, &dst.netErrors}, {&c.timeouts, &dst.timeouts},
		{&c.answers2xx, &dst.answers2xx}, {&c.answers4xx, &dst.answers4xx}, {&c.answers429, &dst.answers429},
		{&c.answers503, &dst.answers503}, {&c.answers5xx, &dst.answers5xx},
	} {
		p[1].Store(p[0].Load())
	}
}

// record is one submission (one key) and what each send of it learned:
// a double click sends the same key twice.
type record struct {
	key     string
	person  int
	invalid bool
	mu      sync.Mutex
	calls   []call
}

// call is what one Submit of a record ended with.
type call struct {
	outcome   client.Outcome // empty: undecided at the end of the grace period
	acked     bool
	forgotten bool
	// answeredAs is the key the answer's status document names when it is
	// not this one: the server answered a resend of the same content as
	// the entry it repeats.
	answeredAs string
}

// newTransport keeps one kept-alive connection per virtual client (two
// for a double click) instead of net/http's default of two per host.
func newTransport(clients int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: clients*2 + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// tearDown releases what the run holds, also after a failed set-up: the
// run's form on a server it does not own, the proxy, the connections, a
// spawned server, and its work directory after a passing run.
func (e *engine) tearDown(ctx context.Context) {
	e.proto.cleanUp(ctx)
	if e.proxy != nil {
		e.proxy.Close()
	}
	if e.transport != nil {
		e.transport.CloseIdleConnections()
	}
	if e.sup != nil {
		e.sup.stop(30 * time.Second)
	}
	if e.ownWorkDir && e.passed {
		os.RemoveAll(e.workDir)
	}
}

func (e *engine) onEvent(ev client.Event) {
	c := &e.counters
	switch ev.Type {
	case client.EventSend:
		c.posts.Add(1)
		if ev.Attempt > 1 {
			c.retries.Add(1)
		}
	case client.EventStatusQuery:
		c.queries.Add(1)
	case client.EventNetworkError:
		c.netErrors.Add(1)
		if ev.Timeout {
			c.timeouts.Add(1)
		}
	case client.EventAnswer:
		e.countAnswer(ev.HTTPStatus)
	}
}

func (e *engine) countAnswer(status int) {
	c := &e.counters
	switch {
	case status == http.StatusTooManyRequests:
		c.answers429.Add(1)
	case status == http.StatusServiceUnavailable:
		c.answers503.Add(1)
	case status >= 500:
		c.answers5xx.Add(1)
	case status >= 400:
		c.answers4xx.Add(1)
	case status >= 200 && status < 300:
		c.answers2xx.Add(1)
	}
}

func (e *engine) fail(err error) {
	e.fatal.CompareAndSwap(nil, &err)
}

// load runs the load phase and the grace period.
func (e *engine) load(ctx context.Context) {
	e.cpuAtStart, e.cpuErr = e.serverCPU()
	e.started = time.Now()
	loadCtx, endLoad := context.WithTimeout(ctx, e.cfg.Duration)
	defer endLoad()
	// Submissions outlive the load phase by the grace period at most.
	submitCtx, endSubmits := context.WithCancel(ctx)
	defer endSubmits()

	var stopProgress func()
	if e.cfg.Progress != nil {
		every := plainProgressEvery
		if e.cfg.ProgressLive {
			every = time.Second
		}
		stopProgress = e.progress(e.cfg.Progress, e.cfg.ProgressLive, every)
	}
	var killer sync.WaitGroup
	if e.cfg.KillEvery > 0 {
		killer.Go(func() { e.killLoop(loadCtx, endLoad, endSubmits) })
	}

	var next atomic.Int64
	take := func() (int, bool) {
		i := int(next.Add(1) - 1)
		if loadCtx.Err() != nil || e.cfg.Count > 0 && i >= e.cfg.Count {
			return 0, false
		}
		return i, true
	}
	var workers sync.WaitGroup
	if e.cfg.Rate > 0 {
		e.arrivals(loadCtx, submitCtx, take, &workers)
		endLoad()
	} else {
		for range e.cfg.Clients {
			workers.Go(func() {
				for {
					i, ok := take()
					if !ok {
						return
					}
					e.person(submitCtx, i)
				}
			})
		}
		// The load phase ends at its duration, or once every person of
		// a counted run has started.
		go func() {
			for loadCtx.Err() == nil && (e.cfg.Count == 0 || int(next.Load()) < e.cfg.Count) {
				select {
				case <-loadCtx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
			endLoad()
		}()
	}
	<-loadCtx.Done()
	e.loadEnded = time.Now()
	e.counters.snapshotInto(&e.atLoadEnd)
	if e.cpuErr == nil {
		e.cpuAtLoadEnd, e.cpuErr = e.serverCPU()
	}
	killer.Wait()
	grace := time.AfterFunc(e.cfg.Grace, endSubmits)
	workers.Wait()
	grace.Stop()
	e.finished = time.Now()
	if stopProgress != nil {
		stopProgress()
	}
}

// serverCPU reads the CPU time of the server process, when it is known.
func (e *engine) serverCPU() (time.Duration, error) {
	pid := e.cfg.ServerPID
	if pid == 0 && e.sup != nil {
		pid = e.sup.pid()
	}
	if pid == 0 {
		return 0, errNoServerPID
	}
	return processCPU(pid)
}

var errNoServerPID = errors.New("no server process to measure")

// arrivals starts people at a fixed rate, each on a free virtual client.
func (e *engine) arrivals(loadCtx, submitCtx context.Context, take func() (int, bool), workers *sync.WaitGroup) {
	slots := make(chan struct{}, e.cfg.Clients)
	interval := time.Duration(float64(time.Second) / e.cfg.Rate)
	for n := 0; ; n++ {
		due := e.started.Add(time.Duration(n) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-loadCtx.Done():
				return
			case <-time.After(d):
			}
		}
		i, ok := take()
		if !ok {
			return
		}
		select {
		case slots <- struct{}{}:
			workers.Go(func() {
				defer func() { <-slots }()
				e.person(submitCtx, i)
			})
		default:
			e.skipped.Add(1)
		}
	}
}

// killLoop kills the spawned server every KillEvery and starts it again,
// until the load phase ends. A server that does not come back ends the
// run.
func (e *engine) killLoop(loadCtx context.Context, endLoad, endSubmits context.CancelFunc) {
	t := time.NewTimer(e.cfg.KillEvery)
	defer t.Stop()
	for {
		select {
		case <-loadCtx.Done():
			return
		case <-t.C:
		}
		e.sup.kill()
		n := e.kills.Add(1)
		e.log.Info("killed the server with SIGKILL", "kill", n)
		// Restart even if the load phase just ended: the checker needs
		// the server.
		if err := e.sup.start(context.WithoutCancel(loadCtx), time.Minute); err != nil {
			e.fail(fmt.Errorf("restart after kill %d: %w", n, err))
			endLoad()
			endSubmits()
			return
		}
		t.Reset(e.cfg.KillEvery)
	}
}

func (e *engine) newRecord(key string, person int, invalid bool) *record {
	r := &record{key: key, person: person, invalid: invalid}
	e.mu.Lock()
	e.records = append(e.records, r)
	e.mu.Unlock()
	return r
}

// person runs one virtual person's plan to its end.
func (e *engine) person(ctx context.Context, i int) {
	e.people.Add(1)
	e.proto.person(ctx, i)
}
