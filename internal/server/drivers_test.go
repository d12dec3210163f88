package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/drivers"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/natsjournal/natstest"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// driverSetting is a --journal or --store value that names each driver
// of the table, with what the test needs for it (an external server is
// skipped without its URL, as the driver suites do).
func driverSetting(t *testing.T, d drivers.Driver) string {
	switch d.Name {
	case drivers.SQLite:
		return "sqlite"
	case drivers.Postgres:
		return pgtest.URL(t)
	case drivers.NATS:
		return natstest.ExternalURL(t)
	}
	t.Fatalf("driver %q of the table has no setting in this test: add it", d.Name)
	return ""
}

// TestDriverTraits: every driver of drivers' table opens through
// OpenDrivers, and each trait that is a capability of the opened value
// says what the value has: the table cannot claim a capability the driver
// lacks, nor miss one it has.
func TestDriverTraits(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	for _, d := range drivers.Stores {
		t.Run("store "+d.Name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Data = t.TempDir()
			cfg.Store = driverSetting(t, d)
			if got := cfg.StoreDriver(); got.Name != d.Name {
				t.Fatalf("%s names driver %q, want %q", cfg.Store, got.Name, d.Name)
			}
			st, err := server.OpenStore(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, locks := st.(store.UploadLocker)
			_, fast := st.(store.TxApplier)
			if locks != d.UploadLocks {
				t.Errorf("UploadLocks %v in the table, store.UploadLocker %v on %T", d.UploadLocks, locks, st)
			}
			if fast != d.FastPath {
				t.Errorf("FastPath %v in the table, store.TxApplier %v on %T", d.FastPath, fast, st)
			}
		})
	}
	for _, d := range drivers.Journals {
		t.Run("journal "+d.Name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Data = t.TempDir()
			cfg.DecideAtAppend = false
			cfg.Journal = driverSetting(t, d)
			cfg.NATSStream = fmt.Sprintf("TRAITS_%d", time.Now().UnixNano())
			if got := cfg.JournalDriver(); got.Name != d.Name {
				t.Fatalf("%s names driver %q, want %q", cfg.Journal, got.Name, d.Name)
			}
			j, st, err := server.OpenDrivers(context.Background(), cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			defer j.Close()
			_, bus := j.(journal.OutcomeBus)
			_, fast := j.(journal.AppendDecider)
			if bus != d.OutcomeBus {
				t.Errorf("OutcomeBus %v in the table, journal.OutcomeBus %v on %T", d.OutcomeBus, bus, j)
			}
			if fast != d.FastPath {
				t.Errorf("FastPath %v in the table, journal.AppendDecider %v on %T", d.FastPath, fast, j)
			}
		})
	}
}

// TestUploadLocksAskedForAndMissing: --uploads s3 on a store shared by
// several instances needs the store's cross-instance locks
// (store.UploadLocker); a wrapper that hides them is a start-up error
// naming the setting, as for the fast path, rather than locks in memory
// that two instances would not share. The embedded store serves one
// instance (its data directory is locked), whose locks in memory are
// enough.
func TestUploadLocksAskedForAndMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	loc, err := s3objects.ParseURL("s3://formd-test?endpoint=http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		store     func(t testing.TB) string
		wrap      bool
		wantLocks bool
		wantErr   bool
	}{
		{"postgres", pgtest.URL, false, true, false},
		{"postgres, locks hidden by a wrapper", pgtest.URL, true, false, true},
		{"sqlite", func(testing.TB) string { return "sqlite" }, false, false, false},
		{"sqlite, wrapped", func(testing.TB) string { return "sqlite" }, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Data = t.TempDir()
			cfg.DecideAtAppend = false
			cfg.Store = tc.store(t)
			cfg.UploadsS3 = &loc
			j, st, err := server.OpenDrivers(ctx, cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wrap {
				st = plainStore{st}
			}
			locks, err := server.UploadLocksFor(cfg, st)
			if (locks != nil) != tc.wantLocks || (err != nil) != tc.wantErr {
				t.Fatalf("locks %v, err %v; want locks %v, an error %v", locks, err, tc.wantLocks, tc.wantErr)
			}
			if !tc.wantErr {
				j.Close()
				st.Close()
				return
			}
			// Refused at start, before the bucket is reached.
			_, err = server.OpenWith(ctx, cfg, log, j, st)
			if err == nil || !strings.Contains(err.Error(), "--uploads") || !strings.Contains(err.Error(), "UploadLocker") {
				t.Fatalf("open: %v, want an error naming --uploads and store.UploadLocker", err)
			}
		})
	}
}
