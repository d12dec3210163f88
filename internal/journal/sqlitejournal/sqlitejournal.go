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
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/release"
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

// schema is a new file's. The tables' names are the journal's own, so
// that on the shared writer of the embedded fast path (the store's file
// attached to the journal's connection) none hides a store table.
const schema = `
CREATE TABLE journal_entries (
	seq         INTEGER PRIMARY KEY,
	form        TEXT    NOT NULL,
	key         TEXT    NOT NULL,
	site        TEXT    NOT NULL,
	id          TEXT    NOT NULL,
	received_at INTEGER NOT NULL,
	fingerprint BLOB    NOT NULL,
	spam        INTEGER NOT NULL,
	claims      TEXT    NOT NULL,
	data        BLOB    NOT NULL,
	digest      BLOB,
	checks      BLOB
);
CREATE UNIQUE INDEX journal_entries_form_key ON journal_entries(form, key);
CREATE TABLE journal_meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO journal_meta(k, v) VALUES ('acked_upto', 0);
CREATE TABLE journal_probe (b BLOB);
` + writtenByTable

// migrations bring an older file up to the current schema; the file's
// user_version counts those applied. A new file gets the schema and the
// last version at once.
var migrations = []string{
	`ALTER TABLE entries ADD COLUMN digest BLOB`,
	`CREATE TABLE probe (b BLOB)`,
	`ALTER TABLE entries RENAME TO journal_entries;
	 ALTER TABLE meta RENAME TO journal_meta;
	 ALTER TABLE probe RENAME TO journal_probe`,
	// The index had the name of one of the store's, and the file records
	// the release that last wrote it. Entries journaled before digests
	// are marked for FillDigests.
	`DROP INDEX main.entries_form_key;
	 CREATE UNIQUE INDEX main.journal_entries_form_key ON journal_entries(form, key);
	 INSERT INTO main.journal_meta(k, v) SELECT 'digests_missing', 1 WHERE EXISTS (SELECT 1 FROM main.journal_entries WHERE digest IS NULL);
	 ` + writtenByTable,
	// What the decision checks in the store (journal.Checks): the
	// proof-of-work solution to spend, the uploads with their fields, the
	// spam reason. NULL for entries of earlier releases, which checked
	// them at intake.
	`ALTER TABLE main.journal_entries ADD COLUMN checks BLOB`,
}

// writtenByTable records the release that last opened the file for
// writing (one row), so that an older binary that refuses the file can
// say which release to run.
const writtenByTable = `CREATE TABLE main.journal_written_by (
	one     INTEGER PRIMARY KEY CHECK (one = 1),
	release TEXT    NOT NULL,
	schema  INTEGER NOT NULL,
	at      INTEGER NOT NULL
);`

// Known is the newest schema version of the journal's file this binary
// knows.
var Known = len(migrations)

const entryColumns = `seq, form, key, site, id, received_at, fingerprint, spam, claims, data, digest, checks`

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

// limitSize sets the file's page budget from a size in bytes, and
// returns the budget in bytes.
func limitSize(ctx context.Context, db *sql.DB, size int64) (int64, error) {
	var pageSize int64
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&pageSize); err != nil {
		return 0, fmt.Errorf("read page size: %w", err)
	}
	var got int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, max(size/pageSize, 1))).Scan(&got); err != nil {
		return 0, fmt.Errorf("limit the size: %w", err)
	}
	return got * pageSize, nil
}

// migrate creates a new file's schema, or applies the migrations an
// older file has not had, each in its own transaction with the version
// that records it (PRAGMA user_version is part of the transaction), and
// records this release as the file's last writer. A file of a newer
// schema is refused before anything is written to it.
func migrate(ctx context.Context, db *sql.DB, path string, now time.Time) error {
	s, tables, err := readSchema(ctx, db, path)
	if err != nil {
		return err
	}
	if err := release.Check(s); err != nil {
		return err
	}
	v := s.Version
	if v == 0 && tables == 0 {
		if err := inTx(ctx, db, "create schema", schema+fmt.Sprintf(`; PRAGMA main.user_version = %d`, len(migrations))); err != nil {
			return err
		}
		v = len(migrations)
	}
	for ; v < len(migrations); v++ {
		if err := inTx(ctx, db, fmt.Sprintf("migrate to %d", v+1), migrations[v]+fmt.Sprintf(`; PRAGMA main.user_version = %d`, v+1)); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO main.journal_written_by(one, release, schema, at) VALUES (1, ?, ?, ?)
		ON CONFLICT(one) DO UPDATE SET release = excluded.release, schema = excluded.schema, at = excluded.at`,
		release.Name(), len(migrations), now.UnixMicro()); err != nil {
		return fmt.Errorf("record the release: %w", err)
	}
	return nil
}

// readSchema reads the file's schema version, the release that last
// wrote it and how many tables it has, writing nothing.
func readSchema(ctx context.Context, db *sql.DB, path string) (release.Schema, int, error) {
	s := release.Schema{What: "journal", Where: path, Known: len(migrations)}
	var tables, recorded int
	if err := db.QueryRowContext(ctx, `PRAGMA main.user_version`).Scan(&s.Version); err != nil {
		return s, 0, fmt.Errorf("read schema version: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil {
		return s, 0, fmt.Errorf("read schema: %w", err)
	}
	s.Empty = tables == 0
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = 'journal_written_by'`).Scan(&recorded); err != nil {
		return s, 0, fmt.Errorf("read schema: %w", err)
	}
	if recorded > 0 {
		if err := db.QueryRowContext(ctx, `SELECT release FROM main.journal_written_by`).Scan(&s.WrittenBy); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return s, 0, fmt.Errorf("read the release that wrote it: %w", err)
		}
	}
	return s, tables, nil
}

// ReadSchema says what the journal file at path has: its schema version,
// the newest this binary knows, and the release that last wrote it. It
// writes nothing (and creates no file: a missing file is version 0).
func ReadSchema(ctx context.Context, path string) (release.Schema, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return release.Schema{What: "journal", Where: path, Known: len(migrations), Empty: true}, nil
	}
	db, err := sqlitedb.OpenReadOnly(path)
	if err != nil {
		return release.Schema{}, fmt.Errorf("read journal schema: %w", err)
	}
	defer db.Close()
	s, _, err := readSchema(ctx, db, path)
	if err != nil {
		return s, fmt.Errorf("read journal schema %s: %w", path, err)
	}
	return s, nil
}

// inTx runs statements in one transaction.
func inTx(ctx context.Context, db *sql.DB, op, statements string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, statements); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (j *Journal) closeDBs() {
	if !j.shared {
		j.wdb.Close()
	}
	j.rdb.Close()
}

// RehashLegacy records today's digest and claims for each entry journaled
// without a digest (journal.LegacyRehasher), once: only while the file
// has the mark its migration to version 4 set, in one transaction that
// clears it.
func (j *Journal) RehashLegacy(ctx context.Context, rehash func(journal.Entry) ([32]byte, []string, bool)) (int, error) {
	tx, err := j.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var marked int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM main.journal_meta WHERE k = 'digests_missing'`).Scan(&marked); err != nil || marked == 0 {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM main.journal_entries WHERE digest IS NULL ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	var es []journal.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("rehash legacy entries: %w", err)
		}
		es = append(es, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	n := 0
	for _, e := range es {
		d, claims, ok := rehash(e)
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE main.journal_entries SET digest = ?, claims = ? WHERE seq = ?`, d[:], strings.Join(claims, ","), e.Seq); err != nil {
			return 0, fmt.Errorf("rehash legacy entries: %w", err)
		}
		n++
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM main.journal_meta WHERE k = 'digests_missing'`); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("rehash legacy entries: %w", err)
	}
	return n, nil
}

var _ journal.AppendDecider = (*Journal)(nil)

// DecideAtAppend installs the embedded fast path: from now on, sync
// entries are decided by fn in the transaction that appends them, and the
// append returns once that commit has (their outcomes already handed to
// those waiting). Only on a journal opened on the shared writer.
func (j *Journal) DecideAtAppend(fn journal.Decide) error {
	if !j.shared {
		return errors.New("decide at append: the journal has no shared writer (Options.Writer)")
	}
	j.decide.Store(&fn)
	return nil
}

// Append queues the entry for the writer. In sync mode it returns once the
// entry is committed and fsync'd (or found already there); otherwise it
// returns at once, before anything is durable, unless the key is queued or
// committed already: then it reports that first entry.
func (j *Journal) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	req := &appendReq{e: e}
	if sync {
		req.done = make(chan appendRes, 1)
	} else {
		first, dup, err := j.queueAsync(ctx, e)
		if err != nil || dup {
			return journal.Appended{Entry: first, Duplicate: dup}, err
		}
	}
	j.closeMu.RLock()
	if j.closing {
		j.closeMu.RUnlock()
		j.unqueue(req)
		return journal.Appended{}, journal.ErrClosed
	}
	select {
	case j.queue <- req:
		j.closeMu.RUnlock()
	default:
		j.closeMu.RUnlock()
		j.unqueue(req)
		return journal.Appended{}, journal.ErrOverloaded
	}
	if !sync {
		return journal.Appended{Entry: e}, nil
	}
	select {
	case r := <-req.done:
		return r.a, r.err
	case <-ctx.Done():
		// The append may still commit; a retry with the same key finds it.
		return journal.Appended{}, ctx.Err()
	}
}

func (j *Journal) writeLoop() {
	defer j.writer.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	batch := make([]*appendReq, 0, j.opts.MaxBatch)
	for {
		select {
		case req, ok := <-j.queue:
			if !ok {
				j.saveWatermark()
				return
			}
			batch = append(batch[:0], req)
		drain:
			for len(batch) < j.opts.MaxBatch {
				select {
				case r, ok := <-j.queue:
					if !ok {
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			j.commit(batch)
			clear(batch)
		case <-tick.C:
			j.saveWatermark()
		case done := <-j.ping:
			close(done)
		}
	}
}

// Alive asks the writer to answer between two commits: it does at once
// when idle, after its commit when busy, and not while a commit hangs.
func (j *Journal) Alive(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case j.ping <- done:
	case <-ctx.Done():
		return fmt.Errorf("journal writer: no answer: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("journal writer: no answer: %w", ctx.Err())
	}
}

// Size is what the file's pages in use take (free pages are used again
// before the file grows, so they do not count against the bound), and the
// bound set by Options.MaxSize.
func (j *Journal) Size(ctx context.Context) (used, limit int64, err error) {
	var pages, free, pageSize int64
	if err := j.rdb.QueryRowContext(ctx, `SELECT p.page_count, f.freelist_count, s.page_size
		FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s`).Scan(&pages, &free, &pageSize); err != nil {
		return 0, 0, fmt.Errorf("journal size: %w", err)
	}
	return (pages - free) * pageSize, j.limit, nil
}

// queueAsync records an async append in queued, or finds the entry
// queued or committed for its key. The writer's insert alone keeps (form,
// key) unique; the lookup is there so that a retry is answered as the
// original, as it is for a sync append. When entries left the queue
// while it looked (committed: unqueued counts them), one of them may be
// the key's, committed after the lookup read: it looks again.
func (j *Journal) queueAsync(ctx context.Context, e journal.Entry) (journal.Entry, bool, error) {
	j.closeMu.RLock()
	closing := j.closing
	j.closeMu.RUnlock()
	if closing {
		return journal.Entry{}, false, journal.ErrClosed
	}
	k := queuedKey{e.Form, e.Key}
	for {
		j.queuedMu.Lock()
		gen := j.unqueued
		j.queuedMu.Unlock()
		first, found, err := j.Lookup(ctx, e.Form, e.Key)
		if err != nil || found {
			return first, found, err
		}
		if j.afterLookup != nil {
			j.afterLookup()
		}
		j.queuedMu.Lock()
		if q, ok := j.queued[k]; ok {
			j.queuedMu.Unlock()
			return q, true, nil
		}
		if j.unqueued == gen {
			j.queued[k] = e
			j.queuedMu.Unlock()
			return journal.Entry{}, false, nil
		}
		j.queuedMu.Unlock()
	}
}

// unqueue forgets an async append once it is committed (or refused).
func (j *Journal) unqueue(reqs ...*appendReq) {
	j.queuedMu.Lock()
	for _, r := range reqs {
		if r.done == nil {
			k := queuedKey{r.e.Form, r.e.Key}
			if q, ok := j.queued[k]; ok && q.ID == r.e.ID {
				delete(j.queued, k)
				j.unqueued++
			}
		}
	}
	j.queuedMu.Unlock()
}

// commit writes one batch in one transaction: one fsync for all of it.
func (j *Journal) commit(batch []*appendReq) {
	ctx := context.Background()
	res := make([]appendRes, len(batch))
	decided := make([]bool, len(batch))
	settled, err := j.writeBatch(ctx, batch, res, decided)
	defer j.unqueue(batch...)
	if err != nil {
		j.failing.Store(&err)
		j.opts.Logger.Error("journal commit failed", "err", err, "entries", len(batch))
		if j.shared {
			// Attached files commit one after the other: the journal's
			// part may be in although the commit failed. What is in is
			// delivered to the processor (a retry of such a key waits
			// for its outcome).
			j.recoverTail(ctx)
		}
		for _, r := range batch {
			if r.done != nil {
				r.done <- appendRes{err: fmt.Errorf("%w: %w", journal.ErrUnavailable, err)}
			}
		}
		return
	}
	j.failing.Store(nil)
	if settled != nil {
		settled()
	}
	var fresh []published
	for i := range batch {
		if !res[i].a.Duplicate {
			fresh = append(fresh, published{e: res[i].a.Entry, decided: decided[i]})
		}
	}
	j.delivery.publish(fresh)
	for i, r := range batch {
		if r.done != nil {
			r.done <- res[i]
		}
	}
}

// writeBatch inserts the batch's entries and, on the fast path, decides
// the new sync ones, in one transaction; decided says which were.
func (j *Journal) writeBatch(ctx context.Context, batch []*appendReq, res []appendRes, decided []bool) (func(), error) {
	tx, err := j.wdb.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	ins := tx.StmtContext(ctx, j.insert)
	defer ins.Close()
	var syncNew []int // the batch's new sync entries, by index
	for i, r := range batch {
		e := r.e
		// Exec reports the new rowid (the position) and whether a row went
		// in, without the cost of reading RETURNING rows.
		res1, err := ins.ExecContext(ctx, e.Form, e.Key, e.Site, e.ID, e.ReceivedAt.UnixMicro(), e.Fingerprint[:],
			e.Spam, strings.Join(e.Claims, ","), []byte(e.Data), e.Digest[:], journal.Checks(e))
		if err != nil {
			return nil, fmt.Errorf("insert entry: %w", err)
		}
		if n, _ := res1.RowsAffected(); n == 1 {
			seq, _ := res1.LastInsertId()
			e.Seq = uint64(seq)
			res[i].a = journal.Appended{Entry: e}
			if r.done != nil {
				syncNew = append(syncNew, i)
			}
			continue
		}
		prev, err := scanEntry(tx.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE form = ? AND key = ?`, e.Form, e.Key))
		if err != nil {
			return nil, fmt.Errorf("read existing entry: %w", err)
		}
		res[i].a = journal.Appended{Entry: prev, Duplicate: true}
	}
	var settled func()
	if fn := j.decide.Load(); fn != nil && len(syncNew) > 0 {
		es := make([]journal.Entry, len(syncNew))
		for k, i := range syncNew {
			es[k] = res[i].a.Entry
		}
		var ok []bool
		ok, settled = (*fn)(ctx, tx, es)
		for k, i := range syncNew {
			decided[i] = ok[k]
		}
	}
	if err := tx.Commit(); err != nil {
		clear(decided)
		return nil, fmt.Errorf("commit: %w", err)
	}
	return settled, nil
}

// recoverTail makes entries committed by a failed shared commit
// deliverable: past lastSeq, they are read back from the file.
func (j *Journal) recoverTail(ctx context.Context) {
	var last sql.NullInt64
	if err := j.rdb.QueryRowContext(ctx, `SELECT MAX(seq) FROM journal_entries`).Scan(&last); err != nil {
		j.opts.Logger.Warn("journal: after a failed commit, the last position could not be read; a restart delivers what is there", "err", err)
		return
	}
	j.delivery.committedUpTo(uint64(last.Int64))
}

// Fetch waits for entries to deliver: due redeliveries first, then new
// entries in journal order.
func (j *Journal) Fetch(ctx context.Context, limit int) ([]journal.Entry, error) {
	return j.delivery.fetch(ctx, limit)
}

// readAfter reads back up to n committed entries with after < seq <= upto,
// in order: those delivery could not keep in memory.
func (j *Journal) readAfter(ctx context.Context, after, upto uint64, n int) ([]journal.Entry, error) {
	rows, err := j.rdb.QueryContext(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`, after, upto, n)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer rows.Close()
	var es []journal.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		es = append(es, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return es, nil
}

// Ack forgets delivered entries: they have their outcome in the store.
func (j *Journal) Ack(_ context.Context, seqs ...uint64) error {
	j.delivery.ack(seqs...)
	return nil
}

// Nak schedules a redelivery after delay.
func (j *Journal) Nak(_ context.Context, seq uint64, delay time.Duration) error {
	j.delivery.nak(seq, delay)
	return nil
}

// Pending hands back, as a new delivery, entries delivered before t and not
// acknowledged since.
func (j *Journal) Pending(_ context.Context, deliveredBefore time.Time, limit int) ([]journal.Entry, error) {
	return j.delivery.pending(deliveredBefore, limit), nil
}

func (j *Journal) saveWatermark() {
	w, changed := j.delivery.unsaved()
	if !changed {
		return
	}
	if _, err := j.wdb.Exec(`UPDATE journal_meta SET v = ? WHERE k = 'acked_upto'`, w); err != nil {
		j.opts.Logger.Warn("journal watermark not saved", "err", err)
		return
	}
	j.delivery.markSaved(w)
}

// Writable says whether the journal can take appends now: a write the
// size of a submission commits (the file is not read-only, the disk and
// the size budget are not full). A success also clears the failure of an
// earlier commit, so the server becomes ready again once space is freed;
// until a probe succeeds, that failure stands.
func (j *Journal) Writable(ctx context.Context) error {
	err := j.probe(ctx)
	if err == nil {
		j.failing.Store(nil)
		return nil
	}
	if errp := j.failing.Load(); errp != nil {
		err = *errp
	}
	return fmt.Errorf("%w: %w", journal.ErrUnavailable, err)
}

// probe commits a page-sized write and takes it back in the same
// transaction: the pages are written to the WAL all the same.
func (j *Journal) probe(ctx context.Context) error {
	tx, err := j.wdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO journal_probe(b) VALUES (zeroblob(8192))`); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM journal_probe`); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

// Prune deletes up to limit entries of a form received before the cutoff,
// for retention. Only entries below the saved watermark go: every one of
// them has its outcome in the store, which keeps the key, so a retry of a
// pruned key is still answered from the store.
func (j *Journal) Prune(ctx context.Context, form string, before time.Time, limit int) (int, error) {
	upto := j.delivery.savedMark()
	res, err := j.wdb.ExecContext(ctx, `DELETE FROM journal_entries WHERE seq IN (
		SELECT seq FROM journal_entries WHERE form = ? AND received_at < ? AND seq <= ? ORDER BY seq LIMIT ?)`,
		form, before.UnixMicro(), upto, limit)
	if err != nil {
		return 0, fmt.Errorf("prune journal: %w", err)
	}
	n, _ := res.RowsAffected()
	switch {
	case n == 0 && !j.prunedSinceTruncate.Load():
	case int(n) == limit:
		j.prunedSinceTruncate.Store(true)
		// More to come: checkpoint without waiting for readers, so that
		// the WAL does not grow through the pass.
		if err := sqlitedb.Checkpoint(ctx, j.wdb, "main"); err != nil {
			return int(n), fmt.Errorf("prune journal: %w", err)
		}
	default:
		// The pass's last chunk: truncate the WAL, tried again while
		// readers keep it busy; still busy, the pass has not failed (the
		// entries are gone, and the next checkpoint truncates it).
		j.prunedSinceTruncate.Store(false)
		if err := sqlitedb.Truncate(ctx, j.wdb, "main"); err != nil && !errors.Is(err, sqlitedb.ErrCheckpointBusy) {
			return int(n), fmt.Errorf("prune journal: %w", err)
		}
	}
	return int(n), nil
}

// Forget deletes the entry of (form, key) once it is acknowledged, and
// truncates the WAL so no copy of its page stays there. Deleting an
// acknowledged entry is safe at any time: nothing delivers it again, and
// the store keeps its key.
func (j *Journal) Forget(ctx context.Context, form, key string) error {
	j.queuedMu.Lock()
	_, queued := j.queued[queuedKey{form, key}]
	j.queuedMu.Unlock()
	if queued {
		return journal.ErrPending
	}
	var seq uint64
	err := j.rdb.QueryRowContext(ctx, `SELECT seq FROM journal_entries WHERE form = ? AND key = ?`, form, key).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("forget journal entry: %w", err)
	}
	if j.delivery.isPending(seq) {
		return journal.ErrPending
	}
	if _, err := j.wdb.ExecContext(ctx, `DELETE FROM journal_entries WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("forget journal entry: %w", err)
	}
	if err := sqlitedb.Truncate(ctx, j.wdb, "main"); err != nil {
		return fmt.Errorf("forget journal entry: %w", err)
	}
	return nil
}

// Lookup finds the entry for (form, key), including an async append still
// waiting for the writer (with Seq 0).
func (j *Journal) Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error) {
	j.queuedMu.Lock()
	q, ok := j.queued[queuedKey{form, key}]
	j.queuedMu.Unlock()
	if ok {
		return q, true, nil
	}
	e, err := scanEntry(j.rdb.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM journal_entries WHERE form = ? AND key = ?`, form, key))
	if errors.Is(err, sql.ErrNoRows) {
		return journal.Entry{}, false, nil
	}
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	return e, true, nil
}

// Read calls fn for every entry matching f, in journal order, a page at a
// time so that no read transaction stays open while fn works.
func (j *Journal) Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error {
	var where []string
	var args []any
	if f.Form != "" {
		where = append(where, "form = ?")
		args = append(args, f.Form)
	}
	if f.Site != "" {
		where = append(where, "site = ?")
		args = append(args, f.Site)
	}
	if !f.Since.IsZero() {
		where = append(where, "received_at >= ?")
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		where = append(where, "received_at < ?")
		args = append(args, f.Until.UnixMicro())
	}
	q := `SELECT ` + entryColumns + ` FROM journal_entries WHERE seq > ?`
	for _, w := range where {
		q += " AND " + w
	}
	q += ` ORDER BY seq LIMIT 500`
	after := f.AfterSeq
	for {
		page, err := j.readPage(ctx, q, append([]any{after}, args...))
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if len(page) < 500 {
			return nil
		}
	}
}

func (j *Journal) readPage(ctx context.Context, q string, args []any) ([]journal.Entry, error) {
	rows, err := j.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer rows.Close()
	var page []journal.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return page, nil
}

// Stats reports the backlog and the age of its oldest entry.
func (j *Journal) Stats(ctx context.Context) (journal.Stats, error) {
	st, probe, cursor := j.delivery.stats()
	if probe {
		var us int64
		err := j.rdb.QueryRowContext(ctx, `SELECT received_at FROM journal_entries WHERE seq > ? ORDER BY seq LIMIT 1`, cursor).Scan(&us)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return st, fmt.Errorf("journal stats: %w", err)
		}
		if err == nil {
			st.OldestPending = time.UnixMicro(us)
		}
	}
	return st, nil
}

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

type scanner interface{ Scan(dest ...any) error }

func scanEntry(s scanner) (journal.Entry, error) {
	var (
		e      journal.Entry
		us     int64
		fp     []byte
		claims string
		data   []byte
		digest []byte
		checks []byte
	)
	if err := s.Scan(&e.Seq, &e.Form, &e.Key, &e.Site, &e.ID, &us, &fp, &e.Spam, &claims, &data, &digest, &checks); err != nil {
		return e, err
	}
	if err := journal.SetChecks(&e, checks); err != nil {
		return e, fmt.Errorf("entry %d: read its checks: %w", e.Seq, err)
	}
	e.ReceivedAt = time.UnixMicro(us)
	copy(e.Fingerprint[:], fp)
	copy(e.Digest[:], digest)
	if claims != "" {
		e.Claims = strings.Split(claims, ",")
	}
	e.Data = data
	return e, nil
}
