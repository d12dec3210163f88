package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/server"
)

// TestBackupOfEarlierReleases backs up the data directory of every
// earlier release under testdata/upgrade as that release left it (the
// sqlite fixtures; the PostgreSQL ones are backed up with pg_dump), with
// today's formd backup, as the Upgrading section tells owners to do
// first; checks the backup, restores it into a new directory, and opens
// the restored data as TestUpgradeFromEarlierReleases opens the
// original: every entry the old release acknowledged is there.
func TestBackupOfEarlierReleases(t *testing.T) {
	t.Parallel()
	archives, err := filepath.Glob(filepath.Join(fixtureDir, "*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, archive := range archives {
		name := strings.TrimSuffix(filepath.Base(archive), ".tar.gz")
		if strings.HasSuffix(name, "-postgres") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			untar(t, archive, dir)
			fx := readFixture(t, dir)
			data := filepath.Join(dir, "data")
			to := filepath.Join(dir, "backup")
			m, err := backup.Take(ctx, backup.Options{Data: data, To: to, Drivers: server.BackupDrivers()})
			if err != nil {
				t.Fatalf("formd backup of %s's data: %v", fx.Commit, err)
			}
			stored := 0
			for _, c := range m.Entries {
				stored += c
			}
			if stored == 0 || m.Journaled < stored {
				t.Fatalf("the manifest counts %v in the store and %d in the journal", m.Entries, m.Journaled)
			}
			if _, err := backup.Verify(ctx, server.BackupDrivers(), to); err != nil {
				t.Fatal(err)
			}
			known, err := server.KnownSchemas(ctx)
			if err != nil {
				t.Fatal(err)
			}
			restored := filepath.Join(dir, "restored")
			_, unlock, err := backup.Restore(ctx, backup.RestoreOptions{From: to, Data: restored, Version: release.Version(), Known: known,
				Drivers: server.BackupDrivers(), Lock: server.LockData})
			if err != nil {
				t.Fatal(err)
			}
			unlock()
			checkUpgrade(t, restored, "sqlite", fx)
		})
	}
	if n < 6 {
		t.Fatalf("%d sqlite fixtures in %s, want one per earlier release", n, fixtureDir)
	}
}
