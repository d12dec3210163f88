package sqlitejournal_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/sqlitedb"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func opener(t *testing.T) func() journal.Journal {
	path := filepath.Join(t.TempDir(), "journal.db")
	return func() journal.Journal {
		j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: path})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return j
	}
}

func TestConformance(t *testing.T) {
	journaltest.Run(t, opener)
}

// The queue in front of the writer is bounded: when it is full, Append
// refuses at once instead of letting memory grow.
func TestFullQueueRefuses(t *testing.T) {
	t.Parallel()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{
		Path: filepath.Join(t.TempDir(), "journal.db"), QueueSize: 1, MaxBatch: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var overloaded int
	for i := range 2000 {
		_, err := j.Append(context.Background(), journaltest.NewEntry("f", string(rune('a'+i%26))+string(rune(i))), false)
		if errors.Is(err, journal.ErrOverloaded) {
			overloaded++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if overloaded == 0 {
		t.Fatal("2000 async appends into a queue of 1 were all taken; the queue is not bounded")
	}
}

// Entries beyond MaxReady are read back from the file, in order.
func TestSpillReadsBack(t *testing.T) {
	t.Parallel()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{
		Path: filepath.Join(t.TempDir(), "journal.db"), MaxReady: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	for i := range 20 {
		if _, err := j.Append(ctx, journaltest.NewEntry("f", string(rune('a'+i))), true); err != nil {
			t.Fatal(err)
		}
	}
	var last uint64
	for n := 0; n < 20; {
		got, err := j.Fetch(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if e.Seq != last+1 {
				t.Fatalf("delivered %d after %d", e.Seq, last)
			}
			last = e.Seq
			n++
		}
	}
}

// A file written by an earlier formd (its tables named entries, meta and
// probe, schema version 2) is migrated: its entries, positions and
// watermark are kept under the journal's own table names.
func TestOldFileIsMigrated(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := sqlitedb.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`
CREATE TABLE entries (seq INTEGER PRIMARY KEY, form TEXT NOT NULL, key TEXT NOT NULL, site TEXT NOT NULL, id TEXT NOT NULL,
	received_at INTEGER NOT NULL, fingerprint BLOB NOT NULL, spam INTEGER NOT NULL, claims TEXT NOT NULL, data BLOB NOT NULL, digest BLOB);
CREATE UNIQUE INDEX entries_form_key ON entries(form, key);
CREATE TABLE meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO meta(k, v) VALUES ('acked_upto', 1);
CREATE TABLE probe (b BLOB);
INSERT INTO entries VALUES (1, 'f', 'k1', 'default', 'e1', 1, x'00', 0, '', '{}', NULL), (2, 'f', 'k2', 'default', 'e2', 2, x'00', 0, '', '{}', NULL);
PRAGMA user_version = 2;`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if e, ok, err := j.Lookup(context.Background(), "f", "k2"); err != nil || !ok || e.ID != "e2" || e.Seq != 2 {
		t.Fatalf("lookup after the migration: %+v %v %v", e, ok, err)
	}
	// Above the watermark (1), entry 2 is delivered again.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := j.Fetch(ctx, 10); err != nil || len(got) != 1 || got[0].Key != "k2" {
		t.Fatalf("fetch after the migration: %+v %v", got, err)
	}
	if a, err := j.Append(context.Background(), journaltest.NewEntry("f", "k3"), true); err != nil || a.Entry.Seq != 3 {
		t.Fatalf("append after the migration: %+v %v", a, err)
	}
}

// A writer stuck in a commit (another program holds the file's write
// lock) does not answer Alive, and answers again once the lock is gone:
// the server's systemd watchdog pings follow it.
func TestAliveFollowsAStuckWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.Alive(ctx); err != nil {
		t.Fatalf("idle writer: %v", err)
	}
	other, err := sqlitedb.OpenWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(ctx, nil) // immediate: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	appended := make(chan error, 1)
	go func() {
		_, err := j.Append(ctx, journaltest.NewEntry("f", "stuck"), true)
		appended <- err
	}()
	// The writer waits for the lock up to its busy timeout (10 s).
	deadline := time.Now().Add(8 * time.Second)
	for {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err := j.Alive(short)
		cancel()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer kept answering while its commit waited for another program's lock")
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("the append once the lock is gone: %v", err)
	}
	if err := j.Alive(ctx); err != nil {
		t.Fatalf("after the lock is gone: %v", err)
	}
}

// Size reports the bound --journal-max-size set, in whole pages.
func TestSizeReportsTheBound(t *testing.T) {
	t.Parallel()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: filepath.Join(t.TempDir(), "journal.db"), MaxSize: 1<<20 + 100})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	used, limit, err := j.Size(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if limit != 1<<20 || used <= 0 || used > limit {
		t.Fatalf("used %d of %d, want some of 1048576", used, limit)
	}
}
