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
	if err := fs.Parse(args); err != nil {
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
	if s.NewAdminToken != "" {
		fmt.Fprintf(stderr, "\nformd: this is the admin token; it is shown once and only its hash is kept:\n\n    %s\n\n"+
			"Use it as 'Authorization: Bearer <token>' on /v1/admin/. Make a new one with 'formd token'.\n\n", s.NewAdminToken)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.Close()
		fmt.Fprintf(stderr, "formd serve: listen on %s (--addr, FORMD_ADDR): %v\n", cfg.Addr, err)
		return 1
	}
	if err := s.Serve(ctx, ln); err != nil {
		log.Error("formd stopped with an error", "err", err)
		return 1
	}
	return 0
}
