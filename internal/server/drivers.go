package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// OpenDrivers opens the journal and the store the settings name. This is
// the one place that knows the driver packages.
func OpenDrivers(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, store.Store, error) {
	if cfg.Journal == "sqlite" || cfg.Store == "sqlite" {
		if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
			return nil, nil, fmt.Errorf("create data directory (--data %s): %w", cfg.Data, err)
		}
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	j, err := OpenJournal(ctx, cfg, log)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return j, st, nil
}

// OpenStore opens the store the settings name.
func OpenStore(ctx context.Context, cfg config.Config) (store.Store, error) {
	switch cfg.Store {
	case "sqlite":
		return sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(cfg.Data, "store.db")})
	}
	return nil, fmt.Errorf("store %q is not supported by this build", cfg.Store)
}

// OpenJournal opens the journal the settings name.
func OpenJournal(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, error) {
	switch cfg.Journal {
	case "sqlite":
		return sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(cfg.Data, "journal.db"), QueueSize: cfg.QueueSize, Logger: log})
	}
	return nil, fmt.Errorf("journal %q is not supported by this build", cfg.Journal)
}
