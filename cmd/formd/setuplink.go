package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
)

func init() {
	commands["setup-link"] = command{"make a new one-time setup link while there is no account, replacing the old one", setupLinkCmd}
}

// setupLinkCmd replaces the setup link of a server without accounts: the
// one a start printed is lost, or expired. Only the one row of the store
// counts, so every instance accepts the new link and none the old.
func setupLinkCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd setup-link", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("public", "127.0.0.1:8080", "where browsers reach formd, for the printed link: a URL (https://forms.example.org) or a host:port (http:// is assumed)")
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	c := cli{"formd setup-link", stderr}
	ctx := context.Background()
	_, st, exit := c.withStore(ctx, loader)
	if exit != 0 {
		return exit
	}
	defer st.Close()
	code, state, err := accounts.New(st, accounts.Config{}).SetupCode(ctx, true)
	if err != nil {
		fmt.Fprintf(stderr, "formd setup-link: %v\n", err)
		return 1
	}
	if state != accounts.SetupIssued {
		fmt.Fprintln(stderr, "formd setup-link: formd has an account already: sign in, or add one with formd users add")
		return 1
	}
	base := *addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	fmt.Fprintln(stdout, accounts.SetupURL(base, code))
	fmt.Fprintln(stderr, "formd: the earlier setup link no longer works; this one does for 24 hours, once.")
	return 0
}
