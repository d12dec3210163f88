package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
)

func init() {
	commands["token"] = command{"make a new admin token, replacing the old one (also a revoked one)", tokenCmd}
}

func tokenCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loader := config.NewLoader(fs, os.Getenv, config.StorageSettings...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	c := cli{"formd token", stderr}
	ctx := context.Background()
	_, st, code := c.withStore(ctx, loader)
	if code != 0 {
		return code
	}
	defer st.Close()
	token, hash := accounts.NewToken()
	if _, err := st.PutToken(ctx, "admin", hash, false); err != nil {
		fmt.Fprintf(stderr, "formd token: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, token)
	fmt.Fprintln(stderr, "formd: the old admin token no longer works; this one is shown once.")
	return 0
}
