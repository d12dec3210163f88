// Command inmem is a study, not part of formd (BENCHMARKS.md §12, issue
// 37 item 5): the embedded tier with its decisions made in memory. It
// serves formd's own intake (POST /v1/forms/{form}/submissions, package
// intake) over a journal that decides each submission in memory — the
// idempotency keys, the participant claims and the places under one
// mutex — before appending the decided record to formd's SQLite journal
// (group commit, fsync), and answers once that record is durable, as formd
// does. A projector writes the journal's records, in order, to a SQLite
// store with formd's unique indexes; the store lags and never decides.
//
//	inmem -addr 127.0.0.1:8090 -forms bench/wrk/bench.yaml -data DIR [-capacity N]
//	inmem -rebuild -n 1000000 -data DIR   (what a restart costs: BENCHMARKS §12)
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/loop"
	"github.com/formd/formd/internal/processor"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	forms := flag.String("forms", "bench/wrk/bench.yaml", "the forms file (formd's YAML)")
	data := flag.String("data", "", "directory for the journal, the store and the snapshot (required)")
	capacity := flag.Int64("capacity", 0, "places of every form (0: no limit)")
	rebuild := flag.Bool("rebuild", false, "measure the rebuild of the state instead of serving")
	n := flag.Int("n", 1_000_000, "with -rebuild: records in the journal to rebuild from")
	debugAddr := flag.String("debug-addr", "", "serve net/http/pprof here (as formd serve --debug-addr)")
	project := flag.Bool("project", true, "run the projector (false: the journal alone, to measure what the store's projection costs)")
	tail := flag.Int("tail", 100_000, "with -rebuild: records after the snapshot")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *data == "" {
		fmt.Fprintln(os.Stderr, "inmem: -data is required: a directory for the journal, the store and the snapshot")
		os.Exit(2)
	}
	if *capacity < 0 {
		fmt.Fprintf(os.Stderr, "inmem: -capacity %d: give 0 for no limit or a number of places\n", *capacity)
		os.Exit(2)
	}
	if *debugAddr != "" {
		go func() {
			mux := http.NewServeMux()
			mux.HandleFunc("/debug/pprof/", pprof.Index)
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
			log.Warn("debug server stopped", "err", http.ListenAndServe(*debugAddr, mux)) //nolint:gosec // a study's loopback tool
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	if *rebuild {
		err = studyRebuild(ctx, *data, *forms, *n, *tail, *capacity)
	} else {
		err = serve(ctx, *addr, *forms, *data, *capacity, *project, log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inmem:", err)
		os.Exit(1)
	}
}

// formSet is intake.Forms over a parsed forms file.
type formSet map[string]*form.Form

func (s formSet) Get(id string) *form.Form { return s[id] }

func loadForms(path string) (formSet, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read forms: %w", err)
	}
	fs, err := form.Parse(src, path)
	if err != nil {
		return nil, fmt.Errorf("parse forms: %w", err)
	}
	set := formSet{}
	for _, f := range fs {
		set[f.ID()] = f
	}
	return set, nil
}

// loadHasher keys the hashes with the secret kept in dir, made on the
// first start: a retry after a restart must hash as its first send did.
func loadHasher(dir string) (*form.Hasher, error) {
	path := filepath.Join(dir, "secret")
	secret, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		secret = make([]byte, form.SecretSize)
		rand.Read(secret) //nolint:errcheck // never fails (Go 1.24)
		err = atomicfile.WriteFile(path, secret, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("installation secret: %w", err)
	}
	if len(secret) != form.SecretSize {
		return nil, fmt.Errorf("installation secret %s: %d bytes, not %d", path, len(secret), form.SecretSize)
	}
	return form.NewHasher(secret), nil
}

func openJournal(ctx context.Context, dir string, log *slog.Logger) (*sqlitejournal.Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(dir, "journal.db"), Logger: log})
}

func serve(ctx context.Context, addr, formsPath, dir string, capacity int64, project bool, log *slog.Logger) error {
	forms, err := loadForms(formsPath)
	if err != nil {
		return err
	}
	j, err := openJournal(ctx, dir, log)
	if err != nil {
		return err
	}
	defer j.Close()
	snap := filepath.Join(dir, "state.snap")
	s, rec, err := recoverState(ctx, j, snap, capacity)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "inmem: state rebuilt: %s\n", rec)
	pctx, stopProjector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopProjector()
	projected := make(chan error, 1)
	var maxLag atomic.Uint64
	var p *projector
	if project {
		if p, err = openProjector(ctx, j, filepath.Join(dir, "store.db")); err != nil {
			return err
		}
		defer p.close()
		go func() { projected <- p.run(pctx) }()
		go watchLag(pctx, j, p, &maxLag)
	}

	hasher, err := loadHasher(dir)
	if err != nil {
		return err
	}
	d := &deciding{j: j, s: s, waits: processor.NewNotifier(), log: log}
	in := intake.New(d, d, forms, d.waits, intake.Config{
		DefaultWait: 5 * time.Second, MaxWait: 30 * time.Second, MaxBody: 1 << 20,
		Hasher: hasher, Logger: log,
	})
	mux := http.NewServeMux()
	in.Register(mux)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	select {
	case err := <-served:
		return err
	case err := <-projected:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv.Shutdown(sctx) //nolint:errcheck // stopping anyway
	return stopAndReport(j, p, projected, stopProjector, &maxLag, s, snap)
}

// watchLag keeps the largest lag of the projection behind the journal.
func watchLag(ctx context.Context, j *sqlitejournal.Journal, p *projector, maxLag *atomic.Uint64) {
	loop.Every(ctx, 100*time.Millisecond, func() {
		if st, err := j.Stats(ctx); err == nil && st.LastSeq > p.pos.Load() {
			lag := st.LastSeq - p.pos.Load()
			if lag > maxLag.Load() {
				maxLag.Store(lag)
			}
		}
	})
}

// stopAndReport reports the projection's lag when the load stopped and
// how long it took to catch up, then writes a snapshot for the next
// start.
func stopAndReport(j *sqlitejournal.Journal, p *projector, projected <-chan error, stopProjector func(), maxLag *atomic.Uint64, s *state, snap string) error {
	ctx := context.Background()
	st, err := j.Stats(ctx)
	if err != nil {
		return err
	}
	if p == nil {
		t := time.Now()
		size, err := writeSnapshot(s, snap)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "inmem: records %d; no projection (-project=false); snapshot %d bytes written in %s\n",
			st.LastSeq, size, time.Since(t).Round(time.Millisecond))
		return nil
	}
	lag := st.LastSeq - min(st.LastSeq, p.pos.Load())
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(time.Minute)
	for p.pos.Load() < st.LastSeq && time.Now().Before(deadline) {
		select {
		case err := <-projected:
			return fmt.Errorf("projector stopped: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	caught, caughtCPU := time.Since(start), cpuTime()-cpu0
	stopProjector()
	if err := <-projected; err != nil {
		return fmt.Errorf("projector: %w", err)
	}
	if p.pos.Load() < st.LastSeq {
		return fmt.Errorf("the projection did not catch up within a minute: at %d of %d", p.pos.Load(), st.LastSeq)
	}
	t := time.Now()
	size, err := writeSnapshot(s, snap)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "inmem: records %d; projection lag at stop %d records (largest seen %d), caught up in %s, catch-up CPU %.1f ms; snapshot %d bytes written in %s\n",
		st.LastSeq, lag, max(lag, maxLag.Load()), caught.Round(time.Millisecond), float64(caughtCPU)/float64(time.Millisecond), size, time.Since(t).Round(time.Millisecond))
	return nil
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
