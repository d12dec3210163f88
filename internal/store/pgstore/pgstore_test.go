package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
	"github.com/formd/formd/internal/store/storetest"
	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	pgtest.AnnounceSkip("the PostgreSQL store suites")
	goleak.VerifyTestMain(m)
}

func open(t *testing.T, u string) *pgstore.Store {
	t.Helper()
	return openClocked(t, u, nil)
}

func openClocked(t *testing.T, u string, now func() time.Time) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Options{URL: u, Now: now})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) func() store.Store {
		u := pgtest.URL(t)
		return func() store.Store { return openClocked(t, u, now) }
	})
}

func TestErasureNoticeKept(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	s := open(t, u)
	t.Cleanup(func() { s.Close() })
	conn := pgtest.Connect(t, u)
	count := storetest.Count(t, func(q string) store.Scanner { return conn.QueryRow(context.Background(), q) })
	storetest.RunErasureNoticeKept(t, s, func() int { return count(`SELECT count(*) FROM events WHERE notice_to IS NOT NULL`) })
}

func TestAccounts(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T, now func() time.Time) func() store.Store {
		u := pgtest.URL(t)
		return func() store.Store { return openClocked(t, u, now) }
	})
}

func TestUploads(t *testing.T) {
	storetest.RunUploads(t, func(t *testing.T, now func() time.Time) func() storetest.UploadStore {
		u := pgtest.URL(t)
		return func() storetest.UploadStore { return openClocked(t, u, now) }
	})
}

func TestUploadLocks(t *testing.T) {
	storetest.RunUploadLocks(t, func(t *testing.T) func() storetest.LockingStore {
		u := pgtest.URL(t)
		return func() storetest.LockingStore { return open(t, u) }
	})
}

// Instances starting together migrate once.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), pgstore.Options{URL: u})
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Several stores on one database, as several instances, decide the same
// people at once: places are never oversold, each participant is live once.
func TestInstancesNoOversell(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	const instances, capacity, people = 3, 40, 300
	stores := make([]*pgstore.Store, instances)
	for i := range stores {
		stores[i] = open(t, u)
		defer stores[i].Close()
	}
	limit := capacity
	if err := stores[0].PutForms(context.Background(), []form.Record{{ID: "f", Site: "s", Source: []byte("id: f"), Capacity: &limit, WhenFull: "waitlist"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, instances*4)
	for i, s := range stores {
		for w := range 4 {
			wg.Go(func() {
				// Every instance sees every person, in batches of 10, as
				// redelivered journal entries would arrive.
				for start := (i*4 + w) * 7 % people; start < people+(i*4+w)*7%people; start += 10 {
					var batch []journal.Entry
					for p := start; p < start+10; p++ {
						n := p % people
						batch = append(batch, journal.Entry{Seq: uint64(n + 1), ID: fmt.Sprint("id-", n), Site: "s", Form: "f",
							Key: fmt.Sprint("k-", n), ReceivedAt: time.Now(), Claims: []string{fmt.Sprint("person-", n/2)}, Data: []byte(`{}`)})
					}
					if err := storetest.ApplyUntilDecided(context.Background(), s, batch); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	caps, err := stores[1].Capacities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	if err := stores[2].Export(context.Background(), "f", func(r store.Row) error {
		counts[r.Status]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c := caps["f"]; c.Taken != capacity || counts["stored"] != capacity || counts["waitlisted"] != people/2-capacity || counts["duplicate"] != people/2 {
		t.Fatalf("capacity %+v, entries %v: want %d stored, %d waitlisted, %d duplicates", caps["f"], counts, capacity, people/2-capacity, people/2)
	}
}

// A database that cannot be reached is store.ErrUnavailable, so the
// processor retries instead of dead-lettering entries.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	target := parsed.Host
	var mu sync.Mutex
	var conns []net.Conn
	cut := false
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if cut {
				mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				mu.Unlock()
				c.Close()
				continue
			}
			conns = append(conns, c, up)
			mu.Unlock()
			go pipe(c, up)
			go pipe(up, c)
		}
	}()
	defer ln.Close()
	parsed.Host = ln.Addr().String()
	s := open(t, parsed.String())
	defer s.Close()
	if _, err := s.Apply(context.Background(), []journal.Entry{{ID: "a", Form: "f", Key: "a", ReceivedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	cut = true
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	_, err = s.Apply(context.Background(), []journal.Entry{{ID: "b", Form: "f", Key: "b", ReceivedAt: time.Now()}})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("apply with the database cut off = %v, want ErrUnavailable", err)
	}
	if _, _, err := s.Outcome(context.Background(), "f", "a"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("outcome with the database cut off = %v, want ErrUnavailable", err)
	}
	// A bad entry is the entry's own failure, not the store's.
	mu.Lock()
	cut = false
	mu.Unlock()
	_, err = s.Apply(context.Background(), []journal.Entry{{ID: "a", Form: "f", Key: "other-key", ReceivedAt: time.Now()}})
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("an entry reusing another's id = %v, want an error that is not ErrUnavailable", err)
	}
}

func pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// A database set up by the migration code before package migrate (the
// same version table, versions 1, 2, 3, 10 and 11 recorded in one
// transaction under the advisory lock) opens: nothing is applied twice,
// its entries are there, and the migrations since are applied.
func TestOpensADatabaseOfTheOldMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := pgtest.URL(t)
	conn := pgtest.Connect(t, u)
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('formd-migrate:' || coalesce(current_schema(), '')))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
			return err
		}
		for _, f := range []struct {
			v    int
			name string
		}{{1, "0001_init.sql"}, {2, "0002_promise.sql"}, {3, "0003_outbox.sql"}, {10, "0010_accounts.sql"}, {11, "0011_console.sql"}} {
			body, err := os.ReadFile(filepath.Join("migrations", f.name))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations(version, applied_at) VALUES ($1, now()) ON CONFLICT DO NOTHING`, f.v); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO entries(id, seq, form, site, key, status, decision, received_at, decided_at, fingerprint, claims, data)
			VALUES ('old-1', 1, 'f', 's', 'k', 'stored', 'stored', now(), now(), '\x00', '{}', '{}')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	s := open(t, u)
	defer s.Close()
	if o, ok, err := s.Outcome(ctx, "f", "k"); err != nil || !ok || o.ID != "old-1" {
		t.Fatalf("the old database's entry: %+v %v %v", o, ok, err)
	}
	var versions string
	if err := conn.QueryRow(ctx, `SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	// Later releases' migrations follow; these must be there.
	if !strings.HasPrefix(versions, "1,2,3,10,11,12,13,14,15,") {
		t.Fatalf("versions %s, want 1,2,3,10,11 kept and 12 to 15 and later ones added", versions)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'entries_retention'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the retention index: %d %v", n, err)
	}
	// The one-argument formd_promote stays for instances not yet upgraded.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM formd_promote('f')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("formd_promote(form): %d %v", n, err)
	}
}

// The replay store across a restart and across instances on one
// PostgreSQL database.
func TestChallenges(t *testing.T) {
	storetest.RunChallenges(t, func(t *testing.T) func() storetest.ChallengeStore {
		u := pgtest.URL(t)
		return func() storetest.ChallengeStore { return open(t, u) }
	})
}

// Intake's refusal counts, across a restart.
func TestRefusals(t *testing.T) {
	storetest.RunRefusals(t, func(t *testing.T) func() storetest.RefusalStore {
		u := pgtest.URL(t)
		return func() storetest.RefusalStore { return open(t, u) }
	})
}
