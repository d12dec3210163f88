package server

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/drivers"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/natsjournal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/sqlitedb"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// Store is what a store driver provides an instance: the decisions and
// everything kept beside them (store.Store), and the accounts, sessions
// and audit log (accounts.Store). Each consumer depends on the few methods
// it uses.
type Store interface {
	store.Store
	accounts.Store
	store.Uploads
	store.Challenges
	store.Refusals
}

var (
	_ Store = (*sqlitestore.Store)(nil)
	_ Store = (*pgstore.Store)(nil)
)

// OpenDrivers opens the journal and the store the settings name. This is
// the one place that knows the driver packages.
func OpenDrivers(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, Store, error) {
	if err := refuseNewer(ctx, cfg); err != nil {
		return nil, nil, err
	}
	if fastPath(cfg) {
		return openEmbedded(ctx, cfg, log)
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	warnNewerFunctions(ctx, st, log)
	j, err := openJournal(ctx, cfg, log, st, false)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return j, st, nil
}

// warnNewerFunctions says at start that a PostgreSQL store's functions
// are a newer release's: this binary uses them rather than putting its
// older ones back (pgstore.Functions), which is right in a rolling
// restart and worth knowing after a rollback.
func warnNewerFunctions(ctx context.Context, st Store, log *slog.Logger) {
	pg, ok := st.(*pgstore.Store)
	if !ok {
		return
	}
	f, err := pg.Functions(ctx)
	if err != nil {
		log.Warn("read the store's functions version", "err", err)
		return
	}
	if f.Newer() {
		log.Warn("the store's functions are a newer release's: using them, not this binary's",
			"functions_version", f.Version, "defined_by", f.DefinedBy, "this_binary_functions_version", f.Known)
	}
}

// openEmbedded opens the sqlite journal and the sqlite store on one
// shared write connection, for the embedded fast path (wireFastPath):
// the store closes it, after the journal.
func openEmbedded(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, Store, error) {
	if err := dataDir(cfg); err != nil {
		return nil, nil, err
	}
	jpath, spath := filepath.Join(cfg.Data, "journal.db"), filepath.Join(cfg.Data, "store.db")
	w, err := sqlitedb.OpenShared(jpath, spath)
	if err != nil {
		return nil, nil, fmt.Errorf("open the journal and the store: %w", err)
	}
	// The journal first: its migrations bring an older file's tables to
	// their journal_ names (sqlitejournal, migration 3). Until they have,
	// an older journal's table "entries" is main.entries on this
	// connection and hides the store's, which the store's unqualified
	// statements would meet (TestSharedFilesShareNoName pins the rule).
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: jpath, Writer: w, QueueSize: cfg.QueueSize, MaxSize: cfg.JournalMaxSize, Logger: log})
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Options{Path: spath, Writer: w, Readers: cfg.SQLiteReaders})
	if err != nil {
		j.Close()
		w.Close()
		return nil, nil, err
	}
	return j, st, nil
}

// wireFastPath has the journal decide sync entries at append through the
// processor's rules and the store, when the settings ask for it
// (--decide-at-append with the sqlite journal and store, as openEmbedded
// opens them). It says whether it did. Drivers that are asked and lack the
// capability (journal.AppendDecider, store.TxApplier on the shared writer)
// are an error: a wrapper that drops it would otherwise turn the fast path
// off without a word.
func wireFastPath(cfg config.Config, j journal.Journal, st Store, proc *processor.Processor) (bool, error) {
	if !fastPath(cfg) {
		return false, nil
	}
	aj, ok := j.(journal.AppendDecider)
	if !ok {
		return false, fmt.Errorf("the journal (%T) cannot decide at append (journal.AppendDecider); set --decide-at-append=false (FORMD_DECIDE_AT_APPEND=false) to decide in the processor", j)
	}
	ts, ok := st.(store.TxApplier)
	if !ok || !ts.Shared() {
		return false, fmt.Errorf("the store (%T) does not decide on the journal's writer (store.TxApplier, opened as OpenDrivers does); set --decide-at-append=false (FORMD_DECIDE_AT_APPEND=false) to decide in the processor", st)
	}
	err := aj.DecideAtAppend(func(ctx context.Context, tx *sql.Tx, es []journal.Entry) ([]bool, func()) {
		return proc.DecideInline(ctx, es, func(ctx context.Context, es []journal.Entry) ([]store.Outcome, error) {
			return ts.ApplyIn(ctx, tx, es)
		})
	})
	return err == nil, err
}

// fastPath says whether the settings ask for the embedded fast path
// (--decide-at-append) on drivers that both have it.
func fastPath(cfg config.Config) bool {
	return cfg.DecideAtAppend && cfg.JournalDriver().FastPath && cfg.StoreDriver().FastPath
}

// dataDir makes the directory of the embedded files, so that any command
// (serve, forms apply, …) works on a fresh --data.
func dataDir(cfg config.Config) error {
	if err := backup.CheckNotRestoring(cfg.Data); err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(cfg.Data, 0o700); err != nil {
		return fmt.Errorf("create the data directory (--data %s, FORMD_DATA): %w", cfg.Data, err)
	}
	// Whatever mode it had: it holds personal data and the secret.
	if err := os.Chmod(cfg.Data, 0o700); err != nil {
		return fmt.Errorf("restrict the data directory (--data %s, FORMD_DATA) to its owner: %w", cfg.Data, err)
	}
	return nil
}

// storeDrivers open each store driver of drivers.Stores, by name
// (TestDriverTraits checks that every row has one); schema reads its
// schema, writing nothing.
var storeDrivers = map[string]struct {
	open   func(ctx context.Context, cfg config.Config) (Store, error)
	schema func(ctx context.Context, cfg config.Config) (release.Schema, error)
}{
	drivers.SQLite: {
		open: func(ctx context.Context, cfg config.Config) (Store, error) {
			if err := dataDir(cfg); err != nil {
				return nil, err
			}
			return sqlitestore.Open(ctx, sqlitestore.Options{Path: filepath.Join(cfg.Data, "store.db"), Readers: cfg.SQLiteReaders})
		},
		schema: func(ctx context.Context, cfg config.Config) (release.Schema, error) {
			return sqlitestore.ReadSchema(ctx, filepath.Join(cfg.Data, "store.db"))
		},
	},
	drivers.Postgres: {
		open: func(ctx context.Context, cfg config.Config) (Store, error) {
			return pgstore.Open(ctx, pgstore.Options{URL: cfg.Store, MaxConns: cfg.PostgresMaxConns})
		},
		schema: func(ctx context.Context, cfg config.Config) (release.Schema, error) {
			return pgstore.ReadSchema(ctx, cfg.Store)
		},
	},
}

// OpenStore opens the store the settings name.
func OpenStore(ctx context.Context, cfg config.Config) (Store, error) {
	d, ok := storeDrivers[cfg.StoreDriver().Name]
	if !ok {
		return nil, fmt.Errorf("store %q is not supported by this build", cfg.Store)
	}
	return d.open(ctx, cfg)
}

// AttachDrivers opens the journal and the store for a tool that works
// beside serving instances (audit, replay, forget): a nats journal's
// stream and consumer are used as the instances made them, never changed,
// and no background work starts.
func AttachDrivers(ctx context.Context, cfg config.Config, log *slog.Logger) (journal.Journal, Store, error) {
	if err := refuseNewer(ctx, cfg); err != nil {
		return nil, nil, err
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	j, err := openJournal(ctx, cfg, log, st, true)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return j, st, nil
}

// deadLetterer is the part of the store a journal records dead letters in.
type deadLetterer interface {
	DeadLetter(ctx context.Context, sub journal.Entry, reason string, attempts int) (store.Outcome, error)
}

func openJournal(ctx context.Context, cfg config.Config, log *slog.Logger, st deadLetterer, attach bool) (journal.Journal, error) {
	switch cfg.JournalDriver().Name {
	case drivers.SQLite:
		if err := dataDir(cfg); err != nil {
			return nil, err
		}
		return sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(cfg.Data, "journal.db"), QueueSize: cfg.QueueSize, MaxSize: cfg.JournalMaxSize, Logger: log})
	case drivers.NATS:
		opts := natsjournal.Options{
			URL:         cfg.Journal,
			Stream:      cfg.NATSStream,
			Replicas:    cfg.NATSReplicas,
			AckWait:     cfg.NATSAckWait,
			MonitorURLs: cfg.NATSMonitor,
			QueueSize:   cfg.QueueSize,
			// The processor dead-letters an entry that fails on its own
			// after MaxAttempts; the journal's limit is for entries that
			// never get that far (their holders keep dying), so it is
			// well above it.
			MaxDeliver: 4 * max(cfg.MaxAttempts, 5),
			Attach:     attach,
			Logger:     log,
		}
		if st != nil {
			opts.DeadLetter = func(ctx context.Context, e journal.Entry, reason string, attempts int) error {
				_, err := st.DeadLetter(ctx, e, reason, attempts)
				return err
			}
		}
		return natsjournal.Open(ctx, opts)
	}
	return nil, fmt.Errorf("journal %q is not supported by this build", cfg.Journal)
}

// refuseNewer refuses data of which any part has a newer schema than this
// binary knows, before either part is opened: each driver refuses its own
// too, but the journal, opened first, would already have recorded this
// release when the store refused.
func refuseNewer(ctx context.Context, cfg config.Config) error {
	schemas, err := SchemaVersions(ctx, cfg)
	if err != nil {
		return err
	}
	for _, s := range schemas {
		if err := release.Check(s); err != nil {
			return err
		}
	}
	return nil
}

// SchemaVersions reads the schema of each file or database the settings
// name (the sqlite journal, then the store), writing nothing and creating
// nothing: for formd version, and for a backup's manifest. A nats journal
// has no schema of formd's and is left out. Each Schema says whether this
// binary can open it (TooNew).
func SchemaVersions(ctx context.Context, cfg config.Config) ([]release.Schema, error) {
	var out []release.Schema
	if cfg.JournalDriver().Name == drivers.SQLite {
		s, err := sqlitejournal.ReadSchema(ctx, filepath.Join(cfg.Data, "journal.db"))
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	if d, ok := storeDrivers[cfg.StoreDriver().Name]; ok {
		s, err := d.schema(ctx, cfg)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}
