package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/sqlitedb"
)

// litestreamBin finds the litestream binary: FORMD_TEST_LITESTREAM, or
// litestream on PATH. .ci/run builds it from its module; without it the
// test skips, unless FORMD_REQUIRE_SERVICES=1 says it must run.
func litestreamBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("FORMD_TEST_LITESTREAM")
	if bin == "" {
		bin, _ = exec.LookPath("litestream")
	}
	if bin == "" {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_REQUIRE_SERVICES=1 and no litestream: set FORMD_TEST_LITESTREAM (.ci/run builds it with go install github.com/benbjohnson/litestream/cmd/litestream@v0.3.13)")
		}
		t.Skip("no litestream binary (set FORMD_TEST_LITESTREAM, or put litestream on PATH)")
	}
	return bin
}

// TestLitestream replicates the journal and the store with Litestream to
// file replicas while writers submit, marks a point, writes more, and
// restores both files to that point: formd opens the restored data (the
// secret copied beside it, as docs/backups-and-upgrades.md says), and every entry
// acknowledged before the point is there exactly once, nothing written
// after it is, and formd audit is clean.
func TestLitestream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs servers; skipped with -short")
	}
	ls := litestreamBin(t)
	t.Parallel()
	dir := t.TempDir()
	bin := buildFormd(t, dir)
	data, replica, restored := filepath.Join(dir, "data"), filepath.Join(dir, "replica"), filepath.Join(dir, "restored")
	formsPath := writeForms(t, dir, crashForms)
	srv := startFormd(t, bin, data, formsPath)
	cfgPath := filepath.Join(dir, "litestream.yml")
	cfg := fmt.Sprintf(`dbs:
  - path: %[1]s/store.db
    monitor-interval: 100ms
    replicas:
      - {type: file, path: %[2]s/store, sync-interval: 100ms}
  - path: %[1]s/journal.db
    monitor-interval: 100ms
    replicas:
      - {type: file, path: %[2]s/journal, sync-interval: 100ms}
`, data, replica)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var lsLog bytes.Buffer
	repl := exec.Command(ls, "replicate", "-config", cfgPath)
	repl.Stdout, repl.Stderr = &lsLog, &lsLog
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if repl.ProcessState == nil {
			repl.Process.Kill()
			repl.Wait()
		}
	})

	client := loadClient()
	ppl := newPeople("p-", false)
	write := func(until int) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		startClients(ctx, 8, func() {
			ppl.send(client, srv.url)
			if acked, _ := ppl.counts(); acked >= until {
				stop()
			}
		})()
	}
	write(400)
	before := ppl.ackedKeys()
	// The point: once the replica holds every acknowledged entry (a
	// restore of its newest state has them all), and before more come.
	probe := filepath.Join(dir, "probe.db")
	// replicated restores the newest state of db's replica and counts
	// the rows of table in it.
	replicated := func(db, table string) (int, error) {
		os.Remove(probe)
		if out, err := exec.Command(ls, "restore", "-config", cfgPath, "-o", probe, filepath.Join(data, db)).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("%v: %s", err, out)
		}
		return countRows(t, probe, table), nil
	}
	for _, r := range []struct{ what, db, table string }{{"journal", "journal.db", "journal_entries"}, {"store", "store.db", "entries"}} {
		poll.UntilNil(t, "the "+r.what+"'s replica to catch up", 30*time.Second, func() error {
			n, err := replicated(r.db, r.table)
			if err == nil && n < len(before) {
				err = fmt.Errorf("%d of %d entries replicated", n, len(before))
			}
			return err
		})
	}
	point := time.Now().UTC()
	// Litestream names WAL segments by the second-resolution clock of
	// the replica's files: a clear second between the point and what
	// follows keeps them apart.
	poll.Until(t, "the next second", 3*time.Second, func() bool { return time.Now().Unix() > point.Unix()+1 })
	write(len(before) + 300)
	poll.UntilNil(t, "the replica to take the writes after the point", 30*time.Second, func() error {
		n, err := replicated("journal.db", "journal_entries")
		if err == nil && n <= len(before) {
			err = fmt.Errorf("%d entries replicated", n)
		}
		return err
	})
	srv.stop(t)
	if err := repl.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	repl.Wait()

	// Restore both files to the point, and the secret beside them.
	if err := os.MkdirAll(restored, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"store.db", "journal.db"} {
		out, err := exec.Command(ls, "restore", "-config", cfgPath, "-timestamp", point.Format(time.RFC3339Nano),
			"-o", filepath.Join(restored, name), filepath.Join(data, name)).CombinedOutput()
		if err != nil {
			t.Fatalf("litestream restore %s: %v\n%s\nreplicate log:\n%s", name, err, out, lsLog.String())
		}
	}
	secret, err := os.ReadFile(filepath.Join(data, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(restored, "secret"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	// What the journal holds beyond the store is decided by a replay.
	var rep bytes.Buffer
	if code := run([]string{"replay", "--data", restored}, &rep, &rep); code != 0 {
		t.Fatalf("formd replay exit %d:\n%s", code, rep.String())
	}
	keys := openRestored(t, bin, restored, formsPath, client)
	after := 0
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s stored %d times", k, n)
		}
		if !before[k] {
			after++
		}
	}
	for k := range before {
		if keys[k] != 1 {
			t.Errorf("%s was acknowledged before the point and is not in the restored data", k)
		}
	}
	if after > 0 {
		t.Errorf("%d entries written after the point are in data restored to the point", after)
	}
	acked, _ := ppl.counts()
	t.Logf("%d acknowledged before the point, %d after; %d restored; replay:\n%s", len(before), acked-len(before), len(keys), rep.String())
	if strings.Contains(lsLog.String(), "level=ERROR") {
		t.Logf("litestream logged errors:\n%s", lsLog.String())
	}
}

// countRows counts a table's rows in a database file nothing writes.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		return -1
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		return -1
	}
	return n
}
