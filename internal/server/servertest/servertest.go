// Package servertest runs a real formd instance (embedded SQLite journal
// and store in a temporary directory) on a loopback port for tests.
package servertest

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/server"
)

// Harness is a running instance.
type Harness struct {
	URL string
	// MetricsURL serves /metrics, which the public URL does not.
	MetricsURL string
	Server     *server.Server
	Data       string
	// Token is the admin token made on start.
	Token string
	stop  func()
}

// Options adjust the instance.
type Options struct {
	// Config changes settings before start (data, addr and forms are set
	// by the harness).
	Config func(*config.Config)
	// WrapJournal and WrapStore wrap the real drivers to inject faults.
	WrapJournal func(journal.Journal) journal.Journal
	WrapStore   func(server.Store) server.Store
	// Data reuses a data directory (to restart on the same files).
	Data string
}

// Start runs an instance with the forms (YAML) applied; it stops when the
// test ends.
func Start(t testing.TB, forms string, opts Options) *Harness {
	t.Helper()
	cfg := config.Default()
	cfg.Data = opts.Data
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
	}
	cfg.RateLimit.Off = true
	cfg.DefaultWait = 10 * time.Second
	cfg.ShutdownTimeout = 10 * time.Second
	if forms != "" {
		path := filepath.Join(t.TempDir(), "forms.yaml")
		if err := os.WriteFile(path, []byte(forms), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Forms = path
	}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	j, st, err := server.OpenDrivers(ctx, cfg, log)
	if err != nil {
		t.Fatalf("open drivers: %v", err)
	}
	if opts.WrapJournal != nil {
		j = opts.WrapJournal(j)
	}
	if opts.WrapStore != nil {
		st = opts.WrapStore(st)
	}
	s, err := server.OpenWith(ctx, cfg, log, j, st)
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.ServeOn(runCtx, server.Listeners{Public: ln, Metrics: mln}) }()
	h := &Harness{URL: "http://" + ln.Addr().String(), MetricsURL: "http://" + mln.Addr().String(), Server: s, Data: cfg.Data, Token: s.NewAdminToken}
	h.stop = func() {
		transport.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server stopped with an error: %v", err)
		}
	}
	t.Cleanup(h.Stop)
	return h
}

// Stop shuts the instance down gracefully (once).
func (h *Harness) Stop() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// Client is an HTTP client for the instance, with enough connections for
// concurrent tests.
func Client() *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: transport,
	}
}

// transport is every Client's: a harness stopping closes its idle
// connections first, since a graceful shutdown waits up to five seconds
// for a connection that was opened and never sent a request (a client
// dials one per concurrent request and may not use them all).
var transport = &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 0}

// testWriter sends logs to the test log, so they show only on failure.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
