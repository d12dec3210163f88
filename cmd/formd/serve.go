package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
)

func init() {
	commands["serve"] = command{"run the server (embedded journal and store under --data by default)", serve}
}

func serve(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loader := config.NewLoader(fs, os.Getenv)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	cfg, err := loader.Load()
	if err != nil {
		fmt.Fprintf(stderr, "formd serve: %v\n", err)
		return 2
	}
	log := cfg.Logger(os.Stderr)
	if os.Getenv("GOGC") == "" {
		// A submission allocates little that lives; collecting at 5x the
		// live heap instead of 2x spends far less CPU on GC under a peak.
		// GOGC and GOMEMLIMIT still override.
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	s, err := server.Open(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "formd serve: %v\n", err)
		return 1
	}
	ls, err := s.Listen()
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "formd serve: %v\n", err)
		return 1
	}
	// Printed only now that the server can be reached with them.
	if s.SetupCode != "" {
		fmt.Fprintf(stderr, "\nformd: no account yet. Make the first (an owner of every site) at this one-time link, valid 24 hours:\n\n    %s\n\n"+
			"or with 'formd users add --email you@example.org --role owner'.\n", accounts.SetupURL(baseURL(cfg, ls.Public.Addr().String()), s.SetupCode))
	}
	if s.SetupPending {
		fmt.Fprintf(stderr, "\nformd: no account yet; a setup link was already issued (by an earlier start or another instance). "+
			"'formd setup-link' makes a new one; 'formd users add --email you@example.org --role owner' makes the account here.\n")
	}
	if s.NewAdminToken != "" {
		fmt.Fprintf(stderr, "\nformd: the admin API token (an owner of every site, given to the first such account); only its hash is kept, and it is printed this once:\n\n    %s\n\n"+
			"Use it as 'Authorization: Bearer <token>' on /v1/admin/. Make a new one with 'formd token'.\n\n", s.NewAdminToken)
	} else {
		fmt.Fprintf(stderr, "formd: an admin token was already issued; 'formd token' makes a new one.\n")
	}
	if err := s.ServeOn(ctx, ls); err != nil {
		log.Error("formd stopped with an error", "err", err)
		return 1
	}
	return 0
}

// baseURL is where people reach this server: --public-url, or else the
// listen address, over https when formd terminates TLS.
func baseURL(cfg config.Config, addr string) string {
	if cfg.PublicURL != "" {
		return cfg.PublicURL
	}
	if cfg.TLS() {
		return "https://" + publicAddr(addr)
	}
	return "http://" + publicAddr(addr)
}

// publicAddr is the listen address as a browser on this machine reaches
// it: an unspecified host (":8080", "0.0.0.0:8080") becomes 127.0.0.1.
func publicAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
