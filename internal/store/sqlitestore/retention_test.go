package sqlitestore_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/sqlitedb"
)

// TestRetentionWhileIntakeRuns: on the embedded fast path's shared writer
// (the journal's file main, the store's attached), a retention pass over
// old entries completes while intake writes on the same connection and a
// reader holds an old snapshot the whole time — the WAL cannot be
// truncated then, which once failed the pass after a 10s wait — and a
// pass with no reader in the way leaves the store's WAL truncated.
func TestRetentionWhileIntakeRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	spath := filepath.Join(dir, "store.db")
	s := openSharedIn(t, dir, nil)
	t.Cleanup(func() { s.Close() })
	if err := s.PutForms(ctx, []form.Record{{ID: "f", Source: []byte("id: f")}}); err != nil {
		t.Fatal(err)
	}
	var seq atomic.Uint64
	entries := func(n int, at time.Time) []journal.Entry {
		es := make([]journal.Entry, n)
		for i := range es {
			k := seq.Add(1)
			key := fmt.Sprint("key-", k)
			es[i] = journal.Entry{Seq: k, ID: fmt.Sprintf("0194a2b3-c4d5-7e6f-8a9b-%012d", k), Site: "default", Form: "f", Key: key,
				Fingerprint: sha256.Sum256([]byte(key)), ReceivedAt: at, Data: []byte(`{"name":"Person","phone":"+8613900012345"}`)}
		}
		return es
	}
	old := time.Now().Add(-48 * time.Hour)
	cutoff := time.Now().Add(-24 * time.Hour)
	put := func(n int) {
		for range n / 500 {
			if _, err := s.Apply(ctx, entries(500, old)); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass := func() (int, error) {
		total := 0
		for {
			n, err := s.Erase(ctx, "f", cutoff, 1000)
			total += n
			if err != nil || n < 1000 {
				return total, err
			}
		}
	}
	put(5000)

	// Intake at full speed on the shared writer, and a reader on an old
	// snapshot, for the whole pass. Its longest batch is logged, not
	// asserted: how long retention kept intake waiting at worst.
	stop := make(chan struct{})
	var intake sync.WaitGroup
	var longest time.Duration
	intake.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := s.Apply(ctx, entries(64, time.Now())); err != nil {
				t.Error(err)
				return
			}
			longest = max(longest, time.Since(start))
		}
	})
	rdb, err := sqlitedb.OpenReader(spath, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	tx, err := rdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var before int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	erased, err := pass()
	close(stop)
	intake.Wait()
	if err != nil || erased != 5000 {
		t.Fatalf("retention with a reader holding the WAL: erased %d of 5000, %v; want the pass to complete", erased, err)
	}
	t.Logf("retention with intake and a reader: intake's longest batch of 64 took %v", longest)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// Nothing in the way: the pass ends with the WAL truncated.
	put(1500)
	if erased, err := pass(); err != nil || erased != 1500 {
		t.Fatalf("second pass: erased %d of 1500, %v", erased, err)
	}
	fi, err := os.Stat(spath + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Fatalf("the store's WAL is %d bytes after the pass, want truncated", fi.Size())
	}
}
