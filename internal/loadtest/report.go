package loadtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Report is the result of a run; its JSON form is `formd loadtest
// --json`.
type Report struct {
	// OK is true when nothing was lost, duplicated or oversold, nothing is
	// unresolved, there was no violation, and the run itself did not
	// fail. A plain run has no checker: OK says only that it ran.
	OK     bool     `json:"ok"`
	Mode   string   `json:"mode"` // formd or plain
	Target string   `json:"target"`
	Errors []string `json:"errors,omitempty"`

	Form     string  `json:"form,omitempty"`
	Capacity int     `json:"capacity,omitempty"`
	WhenFull string  `json:"when_full,omitempty"`
	Clients  int     `json:"clients"`
	Arrivals string  `json:"arrivals"`
	Duration float64 `json:"duration_s"`
	Count    int     `json:"count,omitempty"`
	Shares   Shares  `json:"shares"`
	Faults   Faults  `json:"faults"`
	Spawned  bool    `json:"spawned"`
	Kills    int64   `json:"kills"`

	// FormClosed says the run closed its form at the end: a server it did
	// not spawn, without KeepForm.
	FormClosed bool `json:"form_closed,omitempty"`

	// Started is the number of people whose plans began; Skipped the
	// arrivals (with --rate) that found every client busy.
	Started int64 `json:"people_started"`
	Skipped int64 `json:"arrivals_skipped,omitempty"`

	// Verdict is the checker's finding (formd mode).
	*Verdict `json:"verdict,omitempty"`
	// Plain counts a plain run's answers.
	Plain *PlainCounts `json:"plain,omitempty"`

	Throughput Throughput `json:"throughput"`
	Latency    struct {
		// Ack is from the first send to the first acknowledgement (in
		// plain mode, to a 2xx answer).
		Ack Latency `json:"first_ack"`
		// Outcome is from the first send to the definitive answer (in
		// plain mode, to any answer).
		Outcome Latency `json:"outcome"`
	} `json:"latency"`
	Requests RequestCounts `json:"requests"`
	Proxy    *ProxyStats   `json:"proxy,omitempty"`
	// ServerCPU is the server process's CPU time during the load phase,
	// when it could be measured (a --server-pid or a spawned server that
	// was not killed, on Linux).
	ServerCPU *ServerCPU `json:"server_cpu,omitempty"`

	// WorkDir is kept after a failing run with a spawned server: its
	// data, forms file and log, for formd audit and formd export.
	WorkDir string `json:"work_dir,omitempty"`
}

// ServerCPU is what the server spent: less sensitive than the rate to
// other work on a shared machine.
type ServerCPU struct {
	Seconds float64 `json:"seconds"`
	// Cores is the average number of cores the server kept busy.
	Cores float64 `json:"cores"`
	// PerAckUS is CPU microseconds per acknowledgement (in plain mode,
	// per 2xx answer).
	PerAckUS float64 `json:"per_ack_us"`
}

// PlainCounts are a plain run's answers.
type PlainCounts struct {
	Sent     int64 `json:"sent"`
	OK       int64 `json:"ok_2xx"`
	Refused  int64 `json:"refused_4xx"`
	Failed   int64 `json:"failed_5xx"`
	NoAnswer int64 `json:"no_answer"`
}

// Throughput is measured over Window: the load phase of a timed run, or
// from the start to the last answer of a counted one.
type Throughput struct {
	Window       float64 `json:"window_s"`
	AcksPerS     float64 `json:"acks_per_s"`
	OutcomesPerS float64 `json:"outcomes_per_s"`
	RequestsPerS float64 `json:"requests_per_s"`
}

// RequestCounts are the requests the clients sent and what came back.
type RequestCounts struct {
	Posts         int64 `json:"posts"`
	StatusQueries int64 `json:"status_queries"`
	Retries       int64 `json:"retries"`
	NetworkErrors int64 `json:"network_errors"`
	Timeouts      int64 `json:"timeouts"`
	Answers2xx    int64 `json:"answers_2xx"`
	Answers4xx    int64 `json:"answers_4xx"`
	Answers429    int64 `json:"answers_429"`
	Answers503    int64 `json:"answers_503"`
	Answers5xx    int64 `json:"answers_other_5xx"`
}

// report assembles the report of the load; the protocol adds what was
// run and its verdict (for formd, the checker's).
func (e *engine) report(ctx context.Context) *Report {
	r := &Report{
		Clients: e.cfg.Clients, Arrivals: "closed-loop", Duration: e.cfg.Duration.Seconds(), Count: e.cfg.Count,
		Shares: e.cfg.Shares, Faults: e.cfg.Faults, Spawned: e.sup != nil, Kills: e.kills.Load(),
		Started: e.people.Load(), Skipped: e.skipped.Load(),
	}
	if e.cfg.Rate > 0 {
		r.Arrivals = fmt.Sprintf("%g/s", e.cfg.Rate)
	}
	c := &e.counters
	r.Requests = RequestCounts{
		Posts: c.posts.Load(), StatusQueries: c.queries.Load(), Retries: c.retries.Load(),
		NetworkErrors: c.netErrors.Load(), Timeouts: c.timeouts.Load(),
		Answers2xx: c.answers2xx.Load(), Answers4xx: c.answers4xx.Load(), Answers429: c.answers429.Load(),
		Answers503: c.answers503.Load(), Answers5xx: c.answers5xx.Load(),
	}
	// A timed run is measured over its load phase (what was acknowledged
	// by its end); a counted run from the start to its last answer.
	window, src := e.loadEnded.Sub(e.started), &e.atLoadEnd
	if e.cfg.Count > 0 && int(e.people.Load()) >= e.cfg.Count {
		window, src = e.finished.Sub(e.started), &e.counters
	}
	if s := window.Seconds(); s > 0 {
		r.Throughput = Throughput{
			Window:       round(s, 2),
			AcksPerS:     round(float64(src.acked.Load())/s, 1),
			OutcomesPerS: round(float64(src.decided.Load())/s, 1),
			RequestsPerS: round(float64(src.posts.Load()+src.queries.Load())/s, 1),
		}
	}
	if e.cpuErr == nil && e.kills.Load() == 0 {
		cpu := (e.cpuAtLoadEnd - e.cpuAtStart).Seconds()
		phase := e.loadEnded.Sub(e.started).Seconds()
		sc := &ServerCPU{Seconds: round(cpu, 2)}
		if phase > 0 {
			sc.Cores = round(cpu/phase, 2)
		}
		if n := e.atLoadEnd.acked.Load(); n > 0 {
			sc.PerAckUS = round(cpu*1e6/float64(n), 1)
		}
		r.ServerCPU = sc
	}
	r.Latency.Ack = e.ackHist.summary()
	r.Latency.Outcome = e.outcomeHist.summary()
	if e.proxy != nil {
		s := e.proxy.Stats()
		r.Proxy = &s
	}
	if err := e.fatal.Load(); err != nil {
		r.Errors = append(r.Errors, (*err).Error())
	}
	if e.sup != nil {
		r.Errors = append(r.Errors, e.sup.crashed()...)
	}
	e.proto.report(ctx, r)
	return r
}

func round(f float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	load := fmt.Sprintf("%s clients, %s", commas(int64(r.Clients)), r.Arrivals)
	if r.Count > 0 {
		load += fmt.Sprintf(", %s people", commas(int64(r.Count)))
	} else {
		load += fmt.Sprintf(", %gs", r.Duration)
	}
	pf("formd loadtest (%s mode): %s\n", r.Mode, load)
	pf("  target       %s\n", r.Target)
	if r.Mode == "formd" {
		pf("  form         %s, capacity %s (when full: %s)", r.Form, commas(int64(r.Capacity)), r.WhenFull)
		if r.FormClosed {
			pf("; closed after the run")
		}
		pf("\n")
		pf("  people       %s started", commas(r.Started))
		if s := r.Shares; s != (Shares{}) {
			pf("; shares: double click %g%%, re-register %g%%, invalid %g%%", 100*s.DoubleClick, 100*s.Reregister, 100*s.Invalid)
		}
		pf("\n")
	}
	if r.Skipped > 0 {
		pf("  skipped      %s arrivals found every client busy\n", commas(r.Skipped))
	}
	if f := r.Faults; f.Any() || r.Kills > 0 {
		pf("  faults       drop requests %g%%, drop responses %g%%, resets %g%% (%g%% of drops hang), latency %s+%s; %d kill -9\n",
			100*f.DropRequests, 100*f.DropResponses, 100*f.Resets, 100*f.Hang, f.Latency, f.Jitter, r.Kills)
	}
	pf("\n")
	if v := r.Verdict; v != nil {
		pf("  submitted    %12s  keys, from %s people\n", commas(int64(v.Submitted)), commas(int64(v.People)))
		pf("  acknowledged %12s  durably, by the server\n", commas(int64(v.Acknowledged)))
		pf("  stored       %12s  %s: %s stored, %s waitlisted\n", commas(int64(v.Stored)), "live entries",
			commas(int64(v.ByStatus["stored"])), commas(int64(v.ByStatus["waitlisted"])))
		pf("  refused      %12s  as the form promises: %s already registered, %s full, %s invalid\n",
			commas(int64(v.Refused.AlreadyRegistered+v.Refused.Full+v.Refused.Invalid)),
			commas(int64(v.Refused.AlreadyRegistered)), commas(int64(v.Refused.Full)), commas(int64(v.Refused.Invalid)))
		pf("  lost         %12s\n", commas(int64(v.Lost)))
		pf("  duplicated   %12s\n", commas(int64(v.Duplicated)))
		pf("  oversold     %12s\n", commas(int64(v.Oversold)))
		pf("  unresolved   %12s  after the grace period", commas(int64(v.Unresolved)))
		if v.Late > 0 {
			pf(" (%s more decided in the store after their client gave up)", commas(int64(v.Late)))
		}
		pf("\n")
		pf("  violations   %12s\n", commas(int64(v.Violations)))
		if len(v.Why) > 0 {
			pf("\n  what failed:\n")
			reasons := slices.Sorted(maps.Keys(v.Why))
			for _, k := range reasons {
				pf("    %8s  %s", commas(int64(v.Why[k])), k)
				if ex := v.Examples[k]; len(ex) > 0 {
					pf("  (e.g. %s)", strings.Join(ex, ", "))
				}
				pf("\n")
			}
		}
	}
	if p := r.Plain; p != nil {
		pf("  sent         %12s\n  2xx          %12s\n  4xx          %12s\n  5xx          %12s\n  no answer    %12s\n",
			commas(p.Sent), commas(p.OK), commas(p.Refused), commas(p.Failed), commas(p.NoAnswer))
	}
	t := r.Throughput
	pf("\n  throughput   %s acks/s, %s outcomes/s, %s requests/s over %.1fs\n",
		commas(int64(t.AcksPerS)), commas(int64(t.OutcomesPerS)), commas(int64(t.RequestsPerS)), t.Window)
	pf("  latency ms   %10s %10s %10s %10s\n", "p50", "p90", "p99", "max")
	for _, l := range []struct {
		name string
		l    Latency
	}{{"first ack", r.Latency.Ack}, {"outcome", r.Latency.Outcome}} {
		pf("   %-11s %10.1f %10.1f %10.1f %10.1f\n", l.name, l.l.P50, l.l.P90, l.l.P99, l.l.Max)
	}
	q := r.Requests
	pf("  requests     %s POSTs (%s retries), %s status queries; no answer %s (%s timeouts); 429: %s, 503: %s, other 5xx: %s\n",
		commas(q.Posts), commas(q.Retries), commas(q.StatusQueries), commas(q.NetworkErrors), commas(q.Timeouts),
		commas(q.Answers429), commas(q.Answers503), commas(q.Answers5xx))
	if c := r.ServerCPU; c != nil {
		pf("  server CPU   %.1fs in the load phase: %.2f cores, %.0f µs per ack\n", c.Seconds, c.Cores, c.PerAckUS)
	}
	if p := r.Proxy; p != nil {
		pf("  proxy        %s requests: dropped %s, answers dropped %s, resets %s, hung %s, server unreachable %s\n",
			commas(p.Requests), commas(p.DroppedRequests), commas(p.DroppedResponses), commas(p.Resets), commas(p.Hung), commas(p.UpstreamErrors))
	}
	for _, e := range r.Errors {
		pf("\n  error: %s\n", e)
	}
	if r.WorkDir != "" {
		pf("\n  kept for inspection: %s (server data, forms, log)\n", r.WorkDir)
	}
	switch {
	case r.Mode == "plain":
		pf("\n  (plain mode: no checker)\n")
	case r.OK:
		pf("\n  PASS: nothing lost, duplicated or oversold\n")
	default:
		pf("\n  FAIL\n")
	}
}
