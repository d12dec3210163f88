// Package sqlitejournal is the embedded journal driver: one SQLite file in
// WAL mode with synchronous=FULL, written by a single goroutine that
// group-commits whatever appends are waiting, so that one fsync makes many
// submissions durable.
//
// Delivery state (what is in flight, what waits for a redelivery: the
// delivery type) lives in memory; on disk the journal keeps the entries and a watermark below which
// every entry has been acknowledged. After a restart, everything above the
// watermark is delivered again, which is safe because the store decides each
// (form, key) once.
package sqlitejournal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/sqlitedb"
)

var (
	_ journal.Journal        = (*Journal)(nil)
	_ journal.Pruner         = (*Journal)(nil)
	_ journal.Forgetter      = (*Journal)(nil)
	_ journal.Writability    = (*Journal)(nil)
	_ journal.LegacyRehasher = (*Journal)(nil)
	_ journal.Liveness       = (*Journal)(nil)
	_ journal.Sizer          = (*Journal)(nil)
)

// Options configure the journal. Zero values take the defaults.
type Options struct {
	// Path is the journal's SQLite file.
	Path string
	// QueueSize bounds the appends waiting for the writer; when it is full,
	// Append answers journal.ErrOverloaded at once. Default 16384.
	QueueSize int
	// MaxBatch bounds the appends committed in one transaction. Default 2048.
	MaxBatch int
	// MaxReady bounds the newly appended entries kept in memory for
	// delivery; beyond it, delivery reads them back from the file. Default
	// 65536.
	MaxReady int
	// MaxSize bounds the file in bytes (PRAGMA max_page_count): past it,
	// appends fail and the server stops saying it is ready, rather than
	// filling the disk. 0 for no bound.
	MaxSize int64
	// Writer, when set, is the write connection to use instead of one of
	// the journal's own: the shared writer of the embedded fast path
	// (sqlitedb.OpenShared, the journal's file main), which the journal
	// does not close. See DecideAtAppend.
	Writer *sql.DB
	// Now is the clock. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Decide is journal.Decide, the embedded fast path's decision.
type Decide = journal.Decide

func (o *Options) setDefaults() {
	if o.QueueSize <= 0 {
		o.QueueSize = journal.DefaultQueueSize
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 2048
	}
	if o.MaxReady <= 0 {
		o.MaxReady = 65536
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Journal is the SQLite journal.
type Journal struct {
	opts  Options
	wdb   *sql.DB // the one write connection
	rdb   *sql.DB // readers
	queue chan *appendReq
	// ping carries Alive's questions to the writer, which closes each
	// channel between two commits.
	ping chan chan struct{}
	// limit is the file's bound in bytes (whole pages), 0 for none.
	limit int64

	closeMu sync.RWMutex
	closing bool
	writer  sync.WaitGroup

	insert *sql.Stmt // prepared once on the write connection
	shared bool      // wdb is the shared writer, closed by its owner

	// prunedSinceTruncate says a full chunk of retention was pruned and
	// only checkpointed: the chunk after it truncates the WAL, even when
	// it finds nothing more.
	prunedSinceTruncate atomic.Bool

	// decide, when set, decides sync entries at append (DecideAtAppend).
	decide atomic.Pointer[Decide]

	// failing holds the error of the last commit, nil once one succeeds.
	failing atomic.Pointer[error]

	// queued are async appends not yet committed, so that Lookup (the
	// status endpoint) can answer "processing" for a key already answered
	// 202.
	queuedMu sync.Mutex
	queued   map[queuedKey]journal.Entry
	// unqueued counts the entries that have left queued (queueAsync).
	unqueued uint64
	// afterLookup, set by tests only, runs in queueAsync between the
	// lookup and the record.
	afterLookup func()

	// delivery hands committed entries out to the processor.
	delivery *delivery
}

type queuedKey struct{ form, key string }

type appendReq struct {
	e    journal.Entry
	done chan appendRes // nil for async appends
}

type appendRes struct {
	a   journal.Appended
	err error
}

// Open opens (creating if needed) the journal file and starts its writer.
func Open(ctx context.Context, opts Options) (*Journal, error) {
	opts.setDefaults()
	if opts.Path == "" {
		return nil, errors.New("open journal: no path")
	}
	wdb, shared := opts.Writer, opts.Writer != nil
	if !shared {
		var err error
		if wdb, err = sqlitedb.OpenWriter(opts.Path); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
	}
	closeWriter := func() {
		if !shared {
			wdb.Close()
		}
	}
	if err := migrate(ctx, wdb, opts.Path, opts.Now()); err != nil {
		closeWriter()
		return nil, fmt.Errorf("open journal %s: %w", opts.Path, err)
	}
	var limit int64
	if opts.MaxSize > 0 {
		var err error
		if limit, err = limitSize(ctx, wdb, opts.MaxSize); err != nil {
			closeWriter()
			return nil, fmt.Errorf("open journal %s: %w", opts.Path, err)
		}
	}
	rdb, err := sqlitedb.OpenReader(opts.Path, 4)
	if err != nil {
		closeWriter()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &Journal{
		opts:   opts,
		wdb:    wdb,
		rdb:    rdb,
		queue:  make(chan *appendReq, opts.QueueSize),
		ping:   make(chan chan struct{}),
		limit:  limit,
		queued: map[queuedKey]journal.Entry{},
		shared: shared,
	}
	var saved uint64
	var last sql.NullInt64
	if err := wdb.QueryRowContext(ctx, `SELECT v FROM journal_meta WHERE k = 'acked_upto'`).Scan(&saved); err != nil {
		j.closeDBs()
		return nil, fmt.Errorf("open journal: read watermark: %w", err)
	}
	if err := wdb.QueryRowContext(ctx, `SELECT MAX(seq) FROM journal_entries`).Scan(&last); err != nil {
		j.closeDBs()
		return nil, fmt.Errorf("open journal: read last position: %w", err)
	}
	j.delivery = newDelivery(saved, uint64(last.Int64), opts.MaxReady, opts.Now, j.readAfter)
	j.insert, err = wdb.PrepareContext(ctx, `INSERT INTO journal_entries(form, key, site, id, received_at, fingerprint, spam, claims, data, digest, checks)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(form, key) DO NOTHING`)
	if err != nil {
		j.closeDBs()
		return nil, fmt.Errorf("open journal: prepare: %w", err)
	}
	j.writer.Add(1)
	go j.writeLoop()
	return j, nil
}

func (j *Journal) closeDBs() {
	if !j.shared {
		j.wdb.Close()
	}
	j.rdb.Close()
}

var _ journal.AppendDecider = (*Journal)(nil)

// Close stops taking appends, commits what is queued, saves the watermark
// and closes the file. Entries not acknowledged are delivered again on the
// next Open.
func (j *Journal) Close() error {
	j.closeMu.Lock()
	if j.closing {
		j.closeMu.Unlock()
		return nil
	}
	j.closing = true
	close(j.queue)
	j.closeMu.Unlock()
	j.writer.Wait()
	j.delivery.close()
	err := errors.Join(j.insert.Close(), j.rdb.Close())
	if !j.shared {
		err = errors.Join(err, j.wdb.Close())
	}
	if err != nil {
		return fmt.Errorf("close journal: %w", err)
	}
	return nil
}
