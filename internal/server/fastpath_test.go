package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
)

// plainStore hides every method of the store but those of server.Store,
// as a test's wrapper does: store.TxApplier among them.
type plainStore struct{ server.Store }

// The fast path asked for (--decide-at-append, the default, with the
// sqlite journal and store) and not to be had, because a wrapper hides
// the store's capability, is an error naming the setting; with the
// setting off the same drivers open.
func TestFastPathAskedForAndMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		cfg := config.Default()
		cfg.Data = t.TempDir()
		cfg.DecideAtAppend = on
		j, st, err := server.OpenDrivers(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.OpenWith(ctx, cfg, slog.New(slog.DiscardHandler), j, plainStore{st})
		if on {
			if err == nil || !strings.Contains(err.Error(), "--decide-at-append=false") || !strings.Contains(err.Error(), "TxApplier") {
				t.Fatalf("fast path asked for with a wrapped store: %v, want an error naming the capability and the setting", err)
			}
			continue // OpenWith closed the drivers
		}
		if err != nil {
			t.Fatalf("fast path off, wrapped store: %v", err)
		}
		s.Close()
	}
}
