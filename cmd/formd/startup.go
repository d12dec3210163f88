package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/server"
)

// cli is the start a one-shot command shares (export, forget, replay,
// audit, token, forms, setup-link, backup, restore, deliveries, version,
// healthcheck): its settings, then the drivers they
// name. Each step prints what failed under the command's name and gives
// the exit code, 2 for settings and 1 for drivers; 0 when it went well.
type cli struct {
	name   string // such as "formd export"
	stderr io.Writer
}

// fail prints err under the command's name and returns code.
func (c cli) fail(code int, err error) int {
	fmt.Fprintf(c.stderr, "%s: %v\n", c.name, err)
	return code
}

// failf prints a message under the command's name and returns code.
func (c cli) failf(code int, format string, a ...any) int {
	return c.fail(code, fmt.Errorf(format, a...))
}

// settings loads the settings.
func (c cli) settings(l *config.Loader) (config.Config, int) {
	cfg, err := l.Load()
	if err != nil {
		return cfg, c.fail(2, err)
	}
	return cfg, 0
}

// store opens the store the settings name; the caller closes it.
func (c cli) store(ctx context.Context, cfg config.Config) (server.Store, int) {
	st, err := server.OpenStore(ctx, cfg)
	if err != nil {
		return nil, c.fail(1, err)
	}
	return st, 0
}

// withStore loads the settings and opens the store they name (export,
// token, setup-link); the caller closes it.
func (c cli) withStore(ctx context.Context, l *config.Loader) (config.Config, server.Store, int) {
	cfg, code := c.settings(l)
	if code != 0 {
		return cfg, nil, code
	}
	st, code := c.store(ctx, cfg)
	return cfg, st, code
}

// attach opens the journal and the store beside serving instances
// (server.AttachDrivers); the caller closes both, the journal first.
func (c cli) attach(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, server.Store, int) {
	j, st, err := server.AttachDrivers(ctx, cfg, log)
	if err != nil {
		return nil, nil, c.fail(1, err)
	}
	return j, st, 0
}

// attached loads the settings and opens the journal and the store beside
// serving instances, logging to stderr (forget, audit); the caller closes
// both with closeDrivers.
func (c cli) attached(ctx context.Context, l *config.Loader) (config.Config, journal.Journal, server.Store, int) {
	cfg, code := c.settings(l)
	if code != 0 {
		return cfg, nil, nil, code
	}
	j, st, code := c.attach(ctx, cfg, cfg.Logger(os.Stderr))
	return cfg, j, st, code
}

// closeDrivers closes what attach opened, the journal first.
func closeDrivers(j journal.Journal, st server.Store) {
	j.Close()
	st.Close()
}
