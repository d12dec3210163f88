package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/webhooks"
)

func init() {
	commands["forms"] = command{"apply or check form definitions (forms apply -f FILE, forms check -f FILE)", formsCmd}
}

func formsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "apply" && args[0] != "check") {
		fmt.Fprintln(stderr, "usage: formd forms apply -f FILE [--yes] [--data DIR | --store URL]\n       formd forms check [-f] FILE")
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("formd forms "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "form definitions, YAML or JSON")
	yes := false
	if sub == "apply" {
		fs.BoolVar(&yes, "yes", false, "apply even when a change removes a field that entries hold values of, or changes unique or capacity of a form with entries")
	}
	loader := config.NewLoader(fs, os.Getenv, append(config.StorageSettings, "webhook-allow")...)
	if err := parseFlags(fs, args[1:]); err != nil {
		return 2
	}
	if *file == "" && fs.NArg() == 1 {
		*file = fs.Arg(0) // formd forms check FILE
	}
	if fs.NArg() > 1 || (fs.NArg() == 1 && *file != fs.Arg(0)) {
		fmt.Fprintf(stderr, "formd forms %s: name one file, with -f FILE or as the argument\n", sub)
		return 2
	}
	if *file == "" {
		fmt.Fprintf(stderr, "formd forms %s: -f FILE is required: name the YAML or JSON file of form definitions\n", sub)
		return 2
	}
	cfg, code := cli{"formd forms " + sub, stderr}.settings(loader)
	if code != 0 {
		return code
	}
	guard := webhooks.NewGuard(cfg.WebhookAllow)
	if sub == "check" {
		raw, err := os.ReadFile(*file)
		if err != nil {
			fmt.Fprintf(stderr, "formd forms check: %v\n", err)
			return 1
		}
		set, err := form.ParseSet(raw, *file, guard.CheckURL)
		if err != nil {
			fmt.Fprintf(stderr, "formd forms check: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%d form(s) valid: %s\n", len(set.Forms), ids(set))
		for _, f := range set.Forms {
			if len(f.Def.Origins) == 0 {
				fmt.Fprintf(stdout, "warning: form %q lists no origins: only its hosted page (/f/%s), servers and mini-programs can send to it; a page of another site that uses the SDK is refused (origin-not-allowed). Add origins: [https://your-site.example] to allow one.\n", f.ID(), f.ID())
			}
		}
		return 0
	}
	ctx := context.Background()
	st, code := cli{"formd forms apply", stderr}.store(ctx, cfg)
	if code != 0 {
		return code
	}
	defer st.Close()
	raw, err := os.ReadFile(*file)
	if err != nil {
		fmt.Fprintf(stderr, "formd forms apply: read forms: %v\n", err)
		return 1
	}
	set, err := form.ParseSet(raw, *file, guard.CheckURL)
	if err != nil {
		fmt.Fprintf(stderr, "formd forms apply: %v\n", err)
		return 1
	}
	plan, err := admin.PlanApply(ctx, st, set)
	if err != nil {
		fmt.Fprintf(stderr, "formd forms apply: %v\n", err)
		return 1
	}
	printPlan(stdout, plan)
	if len(plan.Risks) > 0 && !yes {
		fmt.Fprintln(stderr, "formd forms apply: nothing applied: these changes touch entries already collected:")
		for _, r := range plan.Risks {
			fmt.Fprintf(stderr, "  - %s\n", r)
		}
		fmt.Fprintln(stderr, "Check the form ids and the changes above; run again with --yes to apply them.")
		return 1
	}
	if err := st.PutForms(ctx, set.Records()); err != nil {
		fmt.Fprintf(stderr, "formd forms apply: apply forms from %s: %v\n", *file, err)
		return 1
	}
	fmt.Fprintf(stdout, "applied %d form(s): %s (running servers load them within a second)\n", len(set.Forms), ids(set))
	return 0
}

// printPlan shows, per form, what applying changes.
func printPlan(w io.Writer, p admin.Plan) {
	for _, c := range p.Changes {
		fmt.Fprintf(w, "form %s:\n", c.Form)
		for _, l := range c.Lines() {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// ids lists a set's forms, and its sites' settings as @site.
func ids(set form.Set) string {
	return strings.Join(set.IDs(), ", ")
}
