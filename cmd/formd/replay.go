package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/store"
)

func init() {
	commands["replay"] = command{"decide journal entries again (by form, site, time window); changes nothing already stored", replayCmd}
	commands["audit"] = command{"check that every journal entry has an outcome in the store, every entry its first event, and every claimed file its bytes", auditCmd}
}

// windowFlags are the journal filter flags replay and audit share.
type windowFlags struct {
	form, site, since, until *string
}

func addWindowFlags(fs *flag.FlagSet) windowFlags {
	return windowFlags{
		form:  fs.String("form", "", "only this form"),
		site:  fs.String("site", "", "only this site"),
		since: fs.String("since", "", "only entries received at or after this time (RFC 3339)"),
		until: fs.String("until", "", "only entries received before this time (RFC 3339)"),
	}
}

func (w windowFlags) filter() (journal.Filter, error) {
	since, until, err := replay.ParseWindow(*w.since, *w.until)
	if err != nil {
		return journal.Filter{}, fmt.Errorf("--%w", err)
	}
	return journal.Filter{Form: *w.form, Site: *w.site, Since: since, Until: until}, nil
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	win := addWindowFlags(fs)
	retryDead := fs.Bool("retry-dead", false, "also retry entries that were dead-lettered")
	dryRun := fs.Bool("dry-run", false, "only say what would be restored; change nothing")
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	filter, err := win.filter()
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: %v\n", err)
		return 2
	}
	c := cli{"formd replay", stderr}
	cfg, code := c.settings(loader)
	if code != 0 {
		return code
	}
	log := cfg.Logger(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	j, st, code := c.attach(ctx, cfg, log)
	if code != 0 {
		return code
	}
	defer st.Close()
	defer j.Close()
	newProc := func(observe func(store.Outcome)) replay.Processor {
		return processor.New(j, st, processor.NewNotifier(), processor.Options{Logger: log, Observe: observe, MaxAttempts: 1})
	}
	r, err := replay.Run(ctx, j, st, newProc, replay.Options{Filter: filter, RetryDead: *retryDead, DryRun: *dryRun})
	if r.DryRun {
		fmt.Fprintf(stdout, "dry run: read %d journal entries; nothing was changed\n", r.Read)
	} else {
		fmt.Fprintf(stdout, "read %d journal entries\n", r.Read)
	}
	for _, k := range r.Keys() {
		fmt.Fprintf(stdout, "  %-32s %d\n", k, r.Counts[k])
	}
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: %v\n", err)
		return 1
	}
	return 0
}

func auditCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	win := addWindowFlags(fs)
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	filter, err := win.filter()
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 2
	}
	ctx := context.Background()
	cfg, j, st, code := cli{"formd audit", stderr}.attached(ctx, loader)
	if code != 0 {
		return code
	}
	defer closeDrivers(j, st)
	r, err := replay.Audit(ctx, j, st, filter, nil)
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 1
	}
	for _, e := range r.MissingSamples {
		fmt.Fprintf(stdout, "no outcome: form %s seq %d received %s\n", e.Form, e.Seq, e.ReceivedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(stdout, "journal entries: %d, with an outcome: %d, without: %d\n", r.Journaled, r.Decided, r.Missing)
	for _, k := range r.Keys() {
		fmt.Fprintf(stdout, "  %-28s %d\n", k, r.Statuses[k])
	}
	if r.IDMismatch > 0 {
		fmt.Fprintf(stdout, "  %-28s %d\n", "id differs from journal", r.IDMismatch)
	}
	for _, e := range r.WithoutEvent {
		fmt.Fprintf(stdout, "no first event: form %s entry %s (seq %d)\n", e.Form, e.ID, e.Seq)
	}
	more := ""
	if r.WithoutEventMore {
		more = " (and more)"
	}
	fmt.Fprintf(stdout, "entries without their first event: %d%s\n", len(r.WithoutEvent), more)
	if err := auditParticipants(ctx, st, stdout); err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 1
	}
	for _, fp := range r.Places {
		for _, c := range fp.Options {
			places := "no limit of its own"
			if c.Capacity != nil {
				places = fmt.Sprintf("%d places", *c.Capacity)
			}
			fmt.Fprintf(stdout, "places: form %s option %s: %d stored, %d pending review, %d waitlisted, %s", fp.Form, c.Value, c.Stored, c.Pending, c.Waitlisted, places)
			if c.Over() {
				fmt.Fprintf(stdout, " — ABOVE ITS PLACES (oversold, or its places were lowered below the entries holding them)")
			}
			if c.Drifted() {
				fmt.Fprintf(stdout, " — its counter says %d taken", c.Taken)
			}
			fmt.Fprintln(stdout)
		}
	}
	if r.Missing > 0 {
		fmt.Fprintln(stdout, "entries without an outcome are decided when a server runs, or now with 'formd replay'")
	}
	filesOK, err := auditFiles(ctx, cfg, st, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 1
	}
	if !r.OK() || !filesOK {
		return 1
	}
	return 0
}

// auditParticipants counts what participants left with the organizer:
// drafts saved and not sent (per form, with the oldest's last save —
// never their values) and erasure requests waiting.
func auditParticipants(ctx context.Context, st interface {
	store.DraftStats
	store.ErasureRequests
}, out io.Writer) error {
	counts, err := st.DraftCounts(ctx)
	if err != nil {
		return fmt.Errorf("count drafts: %w", err)
	}
	total := 0
	for _, d := range counts {
		total += d.Count
	}
	fmt.Fprintf(out, "drafts saved and not sent: %d\n", total)
	for _, d := range counts {
		fmt.Fprintf(out, "  %-28s %d (oldest saved %s)\n", d.Form, d.Count, d.Oldest.UTC().Format(time.RFC3339))
	}
	pending, err := st.ErasureRequests(ctx, "", 1000)
	if err != nil {
		return fmt.Errorf("list erasure requests: %w", err)
	}
	fmt.Fprintf(out, "erasure requests waiting for the organizer: %d\n", len(pending))
	return nil
}
