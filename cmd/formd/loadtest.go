package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/formd/formd/internal/loadtest"
)

func init() {
	commands["loadtest"] = command{"benchmark and exactly-once chaos check: virtual clients, faults, kill -9, checker", loadtestCmd}
}

// shareFlag reads a share as 0.15 or 15%.
type shareFlag struct{ v *float64 }

func (s shareFlag) String() string {
	if s.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*s.v, 'g', -1, 64)
}

func (s shareFlag) Set(v string) error {
	pct := strings.HasSuffix(v, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil {
		return fmt.Errorf("%q is not a share: write 0.15 or 15%%", v)
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return fmt.Errorf("%q is not a share from 0 to 1 (0%% to 100%%)", v)
	}
	*s.v = f
	return nil
}

const loadtestHelp = `Usage: formd loadtest [flags]

Registers distinct people into a form of its own (unique phone, a
capacity, rate_limit: off) through virtual clients that speak formd's
client protocol, optionally through a loopback proxy that drops and resets
traffic and while the server is killed with SIGKILL and restarted; then
reads what the server stored and checks it. Only loopback targets. On a
server it did not launch (--url), the run closes its form at the end
(formd has no way to delete a form; --keep-form leaves it open).

  formd loadtest --spawn "formd serve" --clients 500 --duration 30s
  formd loadtest --spawn "formd serve" --clients 300 --duration 60s \
      --drop-requests 15% --drop-responses 15% --kill-every 10s
  formd loadtest --url http://127.0.0.1:8080 --admin-token fmd_…
  formd loadtest --plain --url http://127.0.0.1:8090/api/collections/registrations/records
  formd loadtest --mix --spawn "formd serve" --clients 200 --count 5000

What the checker counts:
{definitions}Already-registered answers to re-registrations, full answers when the
form rejects, and validation failures of invalid input are expected
refusals, not failures.

Exit status: 0 when lost, duplicated, oversold, unresolved and violations
are all zero; 1 when any is not; 2 for bad flags; 3 when the run could
not be carried out (server would not start, export unreadable, …).

Flags:
`

func loadtestCmd(args []string, stdout, stderr io.Writer) int {
	var cfg loadtest.Config
	fs := flag.NewFlagSet("formd loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		var defs strings.Builder
		for _, d := range [][2]string{
			{"submitted", loadtest.DefSubmitted}, {"acknowledged", loadtest.DefAcknowledged},
			{"stored", loadtest.DefStored}, {"lost", loadtest.DefLost}, {"duplicated", loadtest.DefDuplicated},
			{"oversold", loadtest.DefOversold}, {"unresolved", loadtest.DefUnresolved}, {"violations", loadtest.DefViolations},
		} {
			defs.WriteString(hangingIndent(d[0], d[1], 14, 76))
		}
		fmt.Fprint(stderr, strings.Replace(loadtestHelp, "{definitions}", defs.String(), 1))
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.URL, "url", "", "target: the formd server's base URL, or with --plain the URL to POST to (loopback only)")
	spawn := fs.String("spawn", "", `launch this server command, e.g. "formd serve" (--addr, --data and --forms are added when missing)`)
	fs.DurationVar(&cfg.KillEvery, "kill-every", 0, "with --spawn: kill -9 the server this often during the load and restart it")
	fs.StringVar(&cfg.AdminToken, "admin-token", os.Getenv("FORMD_ADMIN_TOKEN"), "admin token to read the export with (env FORMD_ADMIN_TOKEN; a spawned server on fresh data prints its own)")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "with --spawn: directory for the server's data, form and log (default: a temporary one, kept only if the check fails)")
	fs.IntVar(&cfg.ServerPID, "server-pid", 0, "measure this server process's CPU time during the load (Linux; a spawned server is measured unless killed)")
	fs.BoolVar(&cfg.KeepForm, "keep-form", false, "with --url: leave the run's form open at the end (by default it is closed: formd cannot delete a form; its entries stay)")
	fs.BoolVar(&cfg.Plain, "plain", false, "plain mode: one POST per person to --url, no protocol, no checker (for the ceiling and PocketBase)")

	fs.IntVar(&cfg.Clients, "clients", 3000, "virtual clients")
	fs.DurationVar(&cfg.Duration, "duration", 0, "load phase (default 30s; with --count, at most 10m)")
	fs.IntVar(&cfg.Count, "count", 0, "stop after this many people (0: only the duration bounds the run)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "start this many people a second (0: closed loop, each client starts the next person when done)")
	fs.Var(shareFlag{&cfg.Shares.DoubleClick}, "double-click", "share of people who send their submission twice at once (same key), e.g. 10%")
	fs.Var(shareFlag{&cfg.Shares.Reregister}, "reregister", "share of people who register again at once with a new key and the phone written differently")
	fs.Var(shareFlag{&cfg.Shares.Invalid}, "invalid", "share of people who send invalid input (must be refused with 422)")
	fs.IntVar(&cfg.Capacity, "capacity", 1000, "capacity of the run's form")
	fs.StringVar(&cfg.WhenFull, "when-full", "waitlist", "waitlist or reject, when the form is full")
	fs.IntVar(&cfg.Sessions, "sessions", 0, "give the form this many sessions (a select whose options share --capacity as places of their own), each person choosing one in turn")
	fs.StringVar(&cfg.Form, "form", "", "form id (default: a new loadtest-<time>-<random> for each run)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "picks who double-clicks, re-registers or sends invalid input")

	fs.Var(shareFlag{&cfg.Faults.DropRequests}, "drop-requests", "share of requests the proxy drops before the server")
	fs.Var(shareFlag{&cfg.Faults.DropResponses}, "drop-responses", "share of answers the proxy drops after the server answered")
	fs.Var(shareFlag{&cfg.Faults.Resets}, "resets", "share of requests whose connection the proxy resets (half before the server, half mid-answer)")
	cfg.Faults.Hang = 0.2
	fs.Var(shareFlag{&cfg.Faults.Hang}, "hang", "share of drops that hang until the client times out instead of closing")
	fs.DurationVar(&cfg.Faults.Latency, "latency", 0, "latency the proxy adds to each request")
	fs.DurationVar(&cfg.Faults.Jitter, "jitter", 0, "random extra latency, up to this")
	fs.BoolVar(&cfg.Proxy, "proxy", false, "go through the proxy even without faults (to measure its cost)")

	fs.DurationVar(&cfg.AttemptTimeout, "timeout", 0, "client: timeout of one request (default 10s)")
	fs.DurationVar(&cfg.Wait, "wait", 0, "client: Prefer: wait for the outcome before a 202 (default 5s)")
	fs.DurationVar(&cfg.Grace, "grace", 0, "after the load phase, how long undecided submissions may go on (default 30s)")
	mix := fs.Bool("mix", false, "mix mode: in one run, --count submissions (default 2000) each to a plain form, a proof-of-work form and a form with a file (challenges solved and files uploaded before the timed phases); prints each rate and its ratio to the plain form's; a --url server should run with --trusted-proxies 127.0.0.1/32, or the challenges get harder as they are fetched")
	asJSON := fs.Bool("json", false, "print the report as JSON on standard output")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "formd loadtest: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *spawn != "" {
		argv, err := loadtest.SplitCommand(*spawn)
		if err != nil {
			fmt.Fprintf(stderr, "formd loadtest: --spawn: %v\n", err)
			return 2
		}
		if argv[0] == "formd" {
			// The server this binary is, unless another formd is on PATH.
			if _, err := exec.LookPath("formd"); err != nil {
				if self, err := os.Executable(); err == nil {
					argv[0] = self
				}
			}
		}
		cfg.Spawn = argv
	}
	// Progress goes to standard error, never to standard output, which
	// carries the report (--json): rewritten in place on a terminal, a
	// line every few seconds elsewhere.
	cfg.Progress = stderr
	level := slog.LevelInfo
	if isTerminal(os.Stderr) {
		cfg.ProgressLive = true
		level = slog.LevelWarn // the progress line says it
	}
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *mix {
		return loadtestMix(ctx, cfg, *asJSON, stdout, stderr)
	}
	rep, err := loadtest.Run(ctx, cfg)
	if code := printLoadtest(rep, err, *asJSON, stdout, stderr); code != 0 {
		return code
	}
	switch {
	case rep.OK:
		return 0
	case rep.Verdict == nil:
		return 3 // the run broke before the checker could judge it
	default:
		return 1
	}
}

// loadtestMix runs --mix and prints its report.
func loadtestMix(ctx context.Context, cfg loadtest.Config, asJSON bool, stdout, stderr io.Writer) int {
	rep, err := loadtest.RunMix(ctx, cfg)
	if code := printLoadtest(rep, err, asJSON, stdout, stderr); code != 0 {
		return code
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// printLoadtest prints a run's report, as JSON or as text, or why the run
// could not be made: it returns 2 for settings, 3 for a run that broke or
// a report that could not be written, and 0 when the report is printed and
// its verdict is the caller's to read.
func printLoadtest(rep interface{ WriteText(io.Writer) }, err error, asJSON bool, stdout, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "formd loadtest: %v\n", err)
		if loadtest.IsConfigError(err) {
			return 2
		}
		return 3
	}
	if !asJSON {
		rep.WriteText(stdout)
		return 0
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintf(stderr, "formd loadtest: %v\n", err)
		return 3
	}
	return 0
}

// hangingIndent writes "  name  text…" with text wrapped at width and
// continued under itself.
func hangingIndent(name, text string, indent, width int) string {
	var b strings.Builder
	line := fmt.Sprintf("  %-*s", indent, name)
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > width && len(strings.TrimSpace(line)) > len(name) {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = strings.Repeat(" ", indent+2)
		}
		if !strings.HasSuffix(line, " ") {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

// isTerminal reports whether f is a terminal (a character device), where
// a live progress line makes sense.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
