package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/journal"
)

func init() {
	commands["forget"] = command{"erase a person's entries across forms: --email E or --phone P [--region CN] [--dry-run]", forgetCmd}
}

func forgetCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd forget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	email := fs.String("email", "", "the person's e-mail address")
	phone := fs.String("phone", "", "the person's phone number, with + and the country code or with --region")
	region := fs.String("region", "", "the region a national phone number is written for, such as CN")
	dryRun := fs.Bool("dry-run", false, "only count the entries that would be erased")
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	ctx := context.Background()
	_, j, st, code := cli{"formd forget", stderr}.attached(ctx, loader)
	if code != 0 {
		return code
	}
	defer closeDrivers(j, st)
	fg, _ := j.(journal.Forgetter)
	rep, err := erasure.Forget(ctx, st, fg, erasure.Person{Email: *email, Phone: *phone, Region: *region}, nil, *dryRun)
	var ie *erasure.InputError
	if errors.As(err, &ie) {
		fmt.Fprintf(stderr, "formd forget: %v (--email or --phone)\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "formd forget: %v\n", err)
		return 1
	}
	if !*dryRun {
		// The log says whom by kind only: it must not keep what was erased.
		entry := accounts.Entry{At: time.Now(), Actor: accounts.Operator("formd forget").String(), Action: "person.forget", Target: rep.What, Detail: rep.Detail()}
		if err := accounts.New(st, accounts.Config{}).Record(ctx, entry); err != nil {
			fmt.Fprintf(stderr, "formd forget: erased, but not recorded in the audit log: %v\n", err)
			return 1
		}
	}
	verb := "erased"
	if *dryRun {
		verb = "would erase"
	}
	fmt.Fprintf(stdout, "%d entries hold %s; %s %d\n", len(rep.Entries), rep.What, verb, max(rep.Erased, len(rep.Entries)*btoi(*dryRun)))
	forms := rep.Forms()
	ids := slices.Sorted(maps.Keys(forms))
	for _, f := range ids {
		fmt.Fprintf(stdout, "  form %-24s %d\n", f, forms[f])
	}
	if rep.Files > 0 {
		if *dryRun {
			fmt.Fprintf(stdout, "%d files would stop being served at once, their bytes deleted by the server's next pass\n", rep.Files)
		} else {
			fmt.Fprintf(stdout, "%d files are no longer served; the server's next pass deletes their bytes\n", rep.Files)
		}
	}
	if len(rep.Pending) > 0 {
		fmt.Fprintf(stdout, "%d entries are still being processed and were left whole: run formd forget again in a moment\n", len(rep.Pending))
	}
	if rep.JournalKept {
		fmt.Fprintln(stdout, "the journal cannot delete its copies: they go by its own limits (the NATS stream's max_age)")
	}
	if len(rep.Pending) > 0 {
		return 3
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
