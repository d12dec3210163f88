package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/store"
)

func init() {
	commands["replay"] = command{"decide journal entries again (by form, site, time window); changes nothing already stored", replayCmd}
	commands["audit"] = command{"check that every journal entry has an outcome in the store", auditCmd}
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
	f := journal.Filter{Form: *w.form, Site: *w.site}
	for _, t := range []struct {
		name string
		v    string
		dst  *time.Time
	}{{"since", *w.since, &f.Since}, {"until", *w.until, &f.Until}} {
		if t.v == "" {
			continue
		}
		ts, err := time.Parse(time.RFC3339, t.v)
		if err != nil {
			return f, fmt.Errorf("--%s %q is not an RFC 3339 time such as 2027-03-01T09:00:00+08:00", t.name, t.v)
		}
		*t.dst = ts
	}
	return f, nil
}

func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	win := addWindowFlags(fs)
	retryDead := fs.Bool("retry-dead", false, "also retry entries that were dead-lettered")
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	filter, err := win.filter()
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: %v\n", err)
		return 2
	}
	cfg, err := loader.Load()
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: %v\n", err)
		return 2
	}
	log := cfg.Logger(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	j, st, err := server.AttachDrivers(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: %v\n", err)
		return 1
	}
	defer st.Close()
	defer j.Close()
	counts := map[string]int{}
	observe := func(o store.Outcome) {
		if o.Replayed {
			counts["unchanged"]++
		} else {
			counts["restored as "+o.Decision]++
		}
	}
	proc := processor.New(j, st, processor.NewNotifier(), processor.Options{Logger: log, Observe: observe, MaxAttempts: 1})
	var batch []journal.Entry
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := proc.Process(ctx, batch)
		batch = batch[:0]
		if err == nil {
			err = ctx.Err()
		}
		return err
	}
	read := 0
	err = j.Read(ctx, filter, func(e journal.Entry) error {
		read++
		if *retryDead {
			if _, err := st.ForgetDeadLetter(ctx, e.Form, e.Key); err != nil {
				return err
			}
		}
		e.Deliveries = 1
		batch = append(batch, e)
		if len(batch) >= 512 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	fmt.Fprintf(stdout, "read %d journal entries\n", read)
	printCounts(stdout, counts)
	if err != nil {
		fmt.Fprintf(stderr, "formd replay: stopped: %v\n", err)
		return 1
	}
	return 0
}

func auditCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	win := addWindowFlags(fs)
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	filter, err := win.filter()
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 2
	}
	cfg, err := loader.Load()
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 2
	}
	ctx := context.Background()
	j, st, err := server.AttachDrivers(ctx, cfg, cfg.Logger(os.Stderr))
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 1
	}
	defer st.Close()
	defer j.Close()
	counts := map[string]int{}
	read, missing := 0, 0
	err = j.Read(ctx, filter, func(e journal.Entry) error {
		read++
		o, ok, err := st.Outcome(ctx, e.Form, e.Key)
		if err != nil {
			return err
		}
		if !ok {
			missing++
			if missing <= 20 {
				fmt.Fprintf(stdout, "no outcome: form %s seq %d received %s\n", e.Form, e.Seq, e.ReceivedAt.UTC().Format(time.RFC3339))
			}
			return nil
		}
		if o.ID != e.ID {
			counts["id differs from journal"]++
		}
		counts[o.Status]++
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "formd audit: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "journal entries: %d, with an outcome: %d, without: %d\n", read, read-missing, missing)
	printCounts(stdout, counts)
	if missing > 0 {
		fmt.Fprintln(stdout, "entries without an outcome are decided when a server runs, or now with 'formd replay'")
		return 1
	}
	return 0
}

func printCounts(w io.Writer, counts map[string]int) {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-28s %d\n", k, counts[k])
	}
}
