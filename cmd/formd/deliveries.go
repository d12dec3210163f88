package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/store"
)

func init() {
	commands["deliveries"] = command{"webhook and e-mail deliveries: log --entry ID, redeliver (one, or a form's or site's window), disabled, enable", deliveriesCmd}
}

const deliveriesUsage = `usage:
  formd deliveries log --entry ID
  formd deliveries redeliver --event SEQ --endpoint E
  formd deliveries redeliver (--form F | --site S) [--since T] [--until T] [--all]
  formd deliveries disabled
  formd deliveries enable --endpoint E`

func deliveriesCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, deliveriesUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("formd deliveries "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	entry := fs.String("entry", "", "the entry whose deliveries to show")
	event := fs.Uint64("event", 0, "one delivery: its event's number (event_seq in the log)")
	endpoint := fs.String("endpoint", "", "one delivery, or the endpoint to enable: its endpoint id (as the log shows it)")
	win := addWindowFlags(fs)
	all := fs.Bool("all", false, "redeliver delivered ones too, not only the failed")
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args[1:]); err != nil {
		return 2
	}
	c := cli{"formd deliveries " + sub, stderr}
	fail := c.failf
	cfg, code := c.settings(loader)
	if code != 0 {
		return code
	}
	ctx := context.Background()
	open := func() (server.Store, bool) {
		st, err := server.OpenStore(ctx, cfg)
		if err != nil {
			fail(1, "%v", err)
			return nil, false
		}
		return st, true
	}
	record := func(st server.Store, action, target, detail string) int {
		e := accounts.Entry{At: time.Now(), Actor: accounts.Operator("formd deliveries").String(), Action: action, Form: *win.form, Site: *win.site, Target: target, Detail: detail}
		if err := accounts.New(st, accounts.Config{}).Record(ctx, e); err != nil {
			return fail(1, "done, but not recorded in the audit log: %v", err)
		}
		return 0
	}
	switch sub {
	case "log":
		if *entry == "" {
			return fail(2, "--entry ID is required (an entry's id, as exports and the admin API show it)")
		}
		st, ok := open()
		if !ok {
			return 1
		}
		defer st.Close()
		log, err := (&admin.StoreDeliveries{Store: st, Now: time.Now}).ForEntry(ctx, *entry)
		if err != nil {
			return fail(1, "%v", err)
		}
		if len(log) == 0 {
			fmt.Fprintln(stdout, "no deliveries for this entry (its form sends no webhooks or e-mail, or the entry is not decided yet)")
		}
		for _, d := range log {
			fmt.Fprintf(stdout, "%s  %s  event %d (%s)  %s\n", d.EventID, d.Endpoint, d.EventSeq, d.EventType, d.State)
			for _, a := range d.Attempts {
				fmt.Fprintf(stdout, "    %s  %-9s status %3d  %7.1f ms  %s\n", a.At.Format(time.RFC3339), a.Outcome, a.Status,
					float64(a.Latency)/float64(time.Millisecond), a.Excerpt)
			}
			if !d.NextAt.IsZero() {
				fmt.Fprintf(stdout, "    next attempt at %s\n", d.NextAt.Format(time.RFC3339))
			}
		}
		return 0
	case "redeliver":
		filter, err := win.filter()
		if err != nil {
			return fail(2, "%v", err)
		}
		sel := store.DeliverySelection{Form: filter.Form, Site: filter.Site, Since: filter.Since, Until: filter.Until, FailedOnly: !*all}
		switch {
		case *event != 0 || *endpoint != "":
			if *event == 0 || *endpoint == "" {
				return fail(2, "one delivery needs both --event and --endpoint (from formd deliveries log)")
			}
			sel = store.DeliverySelection{Key: &store.DeliveryKey{EventSeq: *event, Endpoint: *endpoint}}
		case filter.Form == "" && filter.Site == "":
			return fail(2, "name what to redeliver: --event and --endpoint, or --form or --site (with --since, --until, --all)")
		}
		st, ok := open()
		if !ok {
			return 1
		}
		defer st.Close()
		n, err := st.Redeliver(ctx, sel, time.Now())
		if err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintf(stdout, "%d deliveries will be sent again (a running server sends them within a second)\n", n)
		return record(st, "deliveries.redeliver", *endpoint, fmt.Sprintf("%d deliveries", n))
	case "disabled":
		st, ok := open()
		if !ok {
			return 1
		}
		defer st.Close()
		off, err := st.DisabledEndpoints(ctx)
		if err != nil {
			return fail(1, "%v", err)
		}
		eps := slices.Sorted(maps.Keys(off))
		for _, e := range eps {
			fmt.Fprintf(stdout, "%s  %s\n", e, off[e])
		}
		if len(eps) == 0 {
			fmt.Fprintln(stdout, "no endpoint is disabled")
		}
		return 0
	case "enable":
		if *endpoint == "" {
			return fail(2, "--endpoint E is required (from formd deliveries disabled)")
		}
		st, ok := open()
		if !ok {
			return 1
		}
		defer st.Close()
		if err := st.EnableEndpoint(ctx, *endpoint); err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintf(stdout, "%s takes deliveries again; redeliver its skipped ones with formd deliveries redeliver --all\n", *endpoint)
		return record(st, "endpoint.enable", *endpoint, "")
	}
	fmt.Fprintln(stderr, deliveriesUsage)
	return 2
}
