package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/webhooks"
)

func init() {
	commands["forms"] = command{"apply, check or export form definitions (forms apply -f FILE [--server URL], forms check -f FILE, forms export --form ID)", formsCmd}
}

const formsUsage = `usage: formd forms apply -f FILE [--yes] [--data DIR | --store URL | --server URL [--token T]]
       formd forms check [-f] FILE
       formd forms export --form ID [-o FILE] [--data DIR | --store URL | --server URL [--token T]]`

func formsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "apply" && args[0] != "check" && args[0] != "export") {
		fmt.Fprintln(stderr, formsUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("formd forms "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var file, formID, out, server, token string
	yes := false
	switch sub {
	case "export":
		fs.StringVar(&formID, "form", "", "the form whose definition to export")
		fs.StringVar(&out, "o", "", "output file (default: standard output)")
	default:
		fs.StringVar(&file, "f", "", "form definitions, YAML or JSON")
	}
	if sub == "apply" {
		fs.BoolVar(&yes, "yes", false, "apply even when a change removes a field that entries hold values of, or changes unique or capacity of a form with entries")
	}
	if sub != "check" {
		fs.StringVar(&server, "server", "", "apply through a running server's admin API, such as https://forms.example.org (env FORMD_SERVER), instead of opening a store")
		fs.StringVar(&token, "token", "", "with --server: an API token of an account, or the admin token (env FORMD_TOKEN)")
	}
	loader := config.NewLoader(fs, os.Getenv, append(config.StorageSettings, "webhook-allow")...)
	if err := parseFlags(fs, args[1:]); err != nil {
		return 2
	}
	if sub == "export" {
		if fs.NArg() > 0 || formID == "" {
			fmt.Fprintln(stderr, "formd forms export: --form ID is required: name the form whose definition to write")
			return 2
		}
	} else {
		if file == "" && fs.NArg() == 1 {
			file = fs.Arg(0) // formd forms check FILE
		}
		if fs.NArg() > 1 || (fs.NArg() == 1 && file != fs.Arg(0)) {
			fmt.Fprintf(stderr, "formd forms %s: name one file, with -f FILE or as the argument\n", sub)
			return 2
		}
		if file == "" {
			fmt.Fprintf(stderr, "formd forms %s: -f FILE is required: name the YAML or JSON file of form definitions\n", sub)
			return 2
		}
	}
	if server == "" {
		server = os.Getenv("FORMD_SERVER")
	}
	if token == "" {
		token = os.Getenv("FORMD_TOKEN")
	}
	cfg, code := cli{"formd forms " + sub, stderr}.settings(loader)
	if code != 0 {
		return code
	}
	guard := webhooks.NewGuard(cfg.WebhookAllow)
	var raw []byte
	if sub != "export" {
		var err error
		if raw, err = os.ReadFile(file); err != nil {
			fmt.Fprintf(stderr, "formd forms %s: read forms: %v\n", sub, err)
			return 1
		}
	}
	if sub == "check" {
		set, err := form.ParseSet(raw, file, guard.CheckURL)
		if err != nil {
			fmt.Fprintf(stderr, "formd forms check: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%d form(s) valid: %s\n", len(set.Forms), ids(set))
		for _, w := range set.Warnings() {
			fmt.Fprintln(stdout, w)
		}
		return 0
	}
	ctx := context.Background()
	if server != "" {
		if loader.Given("data") || loader.Given("store") {
			fmt.Fprintf(stderr, "formd forms %s: --server applies through a running server, which has its own store: leave out --data and --store\n", sub)
			return 2
		}
		rc := remote{base: strings.TrimRight(server, "/"), token: token, hc: &http.Client{Timeout: time.Minute}}
		if token == "" {
			fmt.Fprintf(stderr, "formd forms %s: --server needs a token: --token T or FORMD_TOKEN (an account's API token from the console's My account page, or the admin token)\n", sub)
			return 2
		}
		if sub == "export" {
			return exportDefinition(stdout, stderr, out, func() ([]byte, error) { return rc.definition(ctx, formID) })
		}
		return rc.apply(ctx, stdout, stderr, file, raw, yes)
	}
	if !loader.Given("data") && !loader.Given("store") && cfg.Store == "sqlite" {
		// The default data directory is relative to where the command
		// runs: in another directory than the server's, writing there
		// would make a new, empty store no server reads.
		if _, err := os.Stat(cfg.Data); errors.Is(err, os.ErrNotExist) {
			abs := cfg.Data
			if wd, err := os.Getwd(); err == nil {
				abs = wd + string(os.PathSeparator) + strings.TrimPrefix(cfg.Data, "./")
			}
			fmt.Fprintf(stderr, "formd forms %s: no formd data here: %s does not exist, and no store was named.\n"+
				"Name the server's data: --data DIR (FORMD_DATA) for its embedded store, --store postgres://… (FORMD_STORE),\n"+
				"or apply through the running server: --server URL with --token T (FORMD_TOKEN).\n", sub, abs)
			return 2
		}
	}
	st, code := cli{"formd forms " + sub, stderr}.store(ctx, cfg)
	if code != 0 {
		return code
	}
	defer st.Close()
	if sub == "export" {
		return exportDefinition(stdout, stderr, out, func() ([]byte, error) {
			recs, _, err := st.Forms(ctx, 0)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				if r.ID == formID && len(r.Source) > 0 { // not a deleted form's tombstone
					return r.Source, nil
				}
			}
			return nil, fmt.Errorf("no form %q in the store (--data %s)", formID, cfg.Data)
		})
	}
	set, err := form.ParseSet(raw, file, guard.CheckURL)
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
		risks := make([]string, len(plan.Risks))
		for i, r := range plan.Risks {
			risks[i] = r.String()
		}
		refuseRisks(stderr, risks)
		return 1
	}
	if err := st.PutForms(ctx, set.Records()); err != nil {
		fmt.Fprintf(stderr, "formd forms apply: apply forms from %s: %v\n", file, err)
		return 1
	}
	fmt.Fprintf(stdout, "applied %d form(s): %s (running servers load them within a second)\n", len(set.Forms), ids(set))
	return 0
}

func refuseRisks(stderr io.Writer, risks []string) {
	fmt.Fprintln(stderr, "formd forms apply: nothing applied: these changes touch entries already collected:")
	for _, r := range risks {
		fmt.Fprintf(stderr, "  - %s\n", r)
	}
	fmt.Fprintln(stderr, "Check the form ids and the changes above; run again with --yes to apply them.")
}

// exportDefinition writes a form's stored YAML to out (standard output
// when empty), atomically.
func exportDefinition(stdout, stderr io.Writer, out string, read func() ([]byte, error)) int {
	src, err := read()
	if err != nil {
		fmt.Fprintf(stderr, "formd forms export: %v\n", err)
		return 1
	}
	if out == "" {
		_, err = stdout.Write(src)
	} else {
		err = atomicfile.WriteFile(out, src, 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "formd forms export: %v\n", err)
		return 1
	}
	return 0
}

// printPlan shows, per form, what applying changes.
func printPlan(w io.Writer, p admin.Plan) {
	for _, c := range p.Changes {
		printChange(w, c.Form, c.Lines())
	}
}

func printChange(w io.Writer, id string, lines []string) {
	fmt.Fprintf(w, "form %s:\n", id)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// ids lists a set's forms, and its sites' settings as @site.
func ids(set form.Set) string {
	return strings.Join(set.IDs(), ", ")
}

// remote is a running server's admin API, for forms apply and export
// with --server.
type remote struct {
	base, token string
	hc          *http.Client
}

func (rc remote) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, rc.base+path, strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", rc.base, err)
	}
	req.Header.Set("Authorization", "Bearer "+rc.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/yaml")
	}
	resp, err := rc.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", rc.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("--server %s: read the answer: %w", rc.base, err)
	}
	if resp.StatusCode/100 != 2 {
		var p struct{ Code, Title, Detail string }
		if json.Unmarshal(b, &p) == nil && p.Code != "" {
			msg := p.Title
			if p.Detail != "" {
				msg = p.Detail
			}
			return nil, fmt.Errorf("%s %s: %d %s: %s", method, path, resp.StatusCode, p.Code, msg)
		}
		return nil, fmt.Errorf("%s %s: %d: %.200s (is --server the URL of a formd server?)", method, path, resp.StatusCode, b)
	}
	return b, nil
}

func (rc remote) definition(ctx context.Context, id string) ([]byte, error) {
	return rc.do(ctx, http.MethodGet, "/v1/admin/forms/"+url.PathEscape(id)+"/definition", nil)
}

// apply asks the server for the plan, shows it, and applies the same
// definitions unless a change touches entries already collected and --yes
// is not given: the local path's rule, the server's counts.
func (rc remote) apply(ctx context.Context, stdout, stderr io.Writer, file string, raw []byte, yes bool) int {
	b, err := rc.do(ctx, http.MethodPost, "/v1/admin/forms/plan", raw)
	if err != nil {
		fmt.Fprintf(stderr, "formd forms apply: %v\n", err)
		return 1
	}
	var plan admin.PlanJSON
	if err := json.Unmarshal(b, &plan); err != nil {
		fmt.Fprintf(stderr, "formd forms apply: --server %s: the plan is not JSON: %v\n", rc.base, err)
		return 1
	}
	for _, c := range plan.Changes {
		printChange(stdout, c.Form, c.Lines)
	}
	if len(plan.Risks) > 0 && !yes {
		refuseRisks(stderr, plan.Risks)
		return 1
	}
	// --yes (or no risk): the plan's token lets the server apply what
	// reaches entries; a change made meanwhile has another token, and
	// the server refuses it.
	if b, err = rc.do(ctx, http.MethodPut, "/v1/admin/forms?confirm="+url.QueryEscape(plan.Confirm), raw); err != nil {
		fmt.Fprintf(stderr, "formd forms apply: apply forms from %s: %v\n", file, err)
		return 1
	}
	var applied struct{ Applied []string }
	if err := json.Unmarshal(b, &applied); err != nil {
		fmt.Fprintf(stderr, "formd forms apply: --server %s: %v\n", rc.base, err)
		return 1
	}
	fmt.Fprintf(stdout, "applied %d form(s) through %s: %s\n", len(applied.Applied), rc.base, strings.Join(applied.Applied, ", "))
	return 0
}
