// Package sqlitedb is how formd opens its SQLite files (the embedded
// journal and the embedded store): WAL mode, synchronous=FULL so that a
// commit is on disk when it returns, one write connection per file (SQLite
// has one writer; a pool would only queue on its lock) and a pool of
// read-only connections.
package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// driverName is the database/sql driver with formd's per-connection
// settings applied on every new connection.
const driverName = "sqlite3-formd"

// formdDriver applies formd's per-connection settings on every new
// connection.
var formdDriver = &sqlite3.SQLiteDriver{ConnectHook: connectSettings}

func init() { sql.Register(driverName, formdDriver) }

func connectSettings(c *sqlite3.SQLiteConn) error {
	// Checkpoint every ~40 MiB of WAL instead of the default 4 MiB: a
	// page rewritten by many commits (the last leaf of an index) is
	// copied to the database once per checkpoint, so fewer checkpoints
	// cost less CPU and I/O at the same durability.
	if _, err := c.Exec("PRAGMA wal_autocheckpoint = 10000", nil); err != nil {
		return err
	}
	// Deleted content is overwritten with zeros, so that data erased
	// for retention or at a person's request is gone from the file,
	// not left in a free page.
	_, err := c.Exec("PRAGMA secure_delete = ON", nil)
	return err
}

// writerParams are the write connection's settings: WAL, every commit
// fsync'd, a lock waited for rather than failed on, transactions that
// begin IMMEDIATE (so a writer never fails half-way on a lock), 64 MiB of
// page cache.
const writerParams = "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_txlock=immediate&_cache_size=-65536"

// busyTimeout is the writer's _busy_timeout above.
const busyTimeout = 10 * time.Second

// OpenWriter opens the single write connection of a file, creating it.
func OpenWriter(path string) (*sql.DB, error) {
	if err := ownerOnly(path); err != nil {
		return nil, err
	}
	db, err := sql.Open(driverName, "file:"+escapePath(path)+writerParams)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return single(db), nil
}

func single(db *sql.DB) *sql.DB {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	return db
}

// SharedSchema is the name the second file has on a shared writer.
const SharedSchema = "store"

// OpenShared opens one write connection to two files: main is the first
// (the journal), the second (the store) is attached as SharedSchema, with
// the same settings. One transaction on it may write both files: the
// embedded fast path appends entries to the journal and decides them in
// the store in one commit. In WAL mode such a commit is atomic in each
// file, not across them: SQLite commits main first, so a crash in
// between leaves entries journaled and not decided, which the processor
// decides on the next start — never a decision without its entry.
//
// Unqualified table names resolve to main first: the two files must not
// share a table name. Schema changes to the attached file belong on a
// connection of its own (OpenWriter).
func OpenShared(mainPath, attachPath string) (*sql.DB, error) {
	for _, p := range []string{mainPath, attachPath} {
		if err := ownerOnly(p); err != nil {
			return nil, err
		}
	}
	return single(sql.OpenDB(&sharedConnector{dsn: "file:" + escapePath(mainPath) + writerParams, attach: attachPath})), nil
}

// sharedConnector opens the shared writer's connection and attaches the
// second file to it.
type sharedConnector struct{ dsn, attach string }

func (c *sharedConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := formdDriver.Open(c.dsn)
	if err != nil {
		return nil, fmt.Errorf("open shared writer: %w", err)
	}
	sc := conn.(*sqlite3.SQLiteConn)
	for _, q := range []struct {
		sql  string
		args []driver.Value
	}{
		{"ATTACH DATABASE ? AS " + SharedSchema, []driver.Value{c.attach}},
		{"PRAGMA " + SharedSchema + ".journal_mode = WAL", nil},
		{"PRAGMA " + SharedSchema + ".synchronous = FULL", nil},
		{"PRAGMA " + SharedSchema + ".cache_size = -65536", nil},
	} {
		if _, err := sc.Exec(q.sql, q.args); err != nil {
			conn.Close()
			return nil, fmt.Errorf("open shared writer: %s: %w", q.sql, err)
		}
	}
	return conn, nil
}

func (c *sharedConnector) Driver() driver.Driver { return formdDriver }

// escapePath makes a file path safe in an SQLite URI filename: the
// characters that end the path or start an escape there (?, #, %) are
// percent-encoded, so a --data directory may contain them.
func escapePath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// ownerOnly creates the database file readable and writable by its owner
// only, and narrows an existing file and its WAL and shared-memory files
// to that, whatever their mode was: they hold personal data. SQLite gives
// the WAL and shared-memory files the database file's mode.
func ownerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restrict %s to its owner: %w", p, err)
		}
	}
	return nil
}

// Checkpoint copies what the write-ahead log of schema ("main", or
// SharedSchema on the shared writer) holds into the database file, as far
// as readers allow, without waiting for any (PASSIVE): cheap enough to run
// after every chunk of a long deletion, so that the WAL does not grow
// through it, and never holding the write connection for a busy timeout.
func Checkpoint(ctx context.Context, db *sql.DB, schema string) error {
	var busy, logFrames, checkpointed int
	if err := db.QueryRowContext(ctx, "PRAGMA "+schema+".wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		return fmt.Errorf("checkpoint %s: %w", schema, err)
	}
	return nil
}

// Truncate waits for readers, tries, and tries again: see Truncate.
const (
	truncateWait  = 50 * time.Millisecond // the busy timeout of one try
	truncatePause = 20 * time.Millisecond // the first pause between tries, doubling
	truncateTries = 8                     // about 3s in all
)

// Truncate checkpoints the write-ahead log of schema ("main", or
// SharedSchema on the shared writer) into the database file and truncates
// it, so that page versions holding erased data leave the WAL too. A
// reader on an older snapshot keeps it from finishing: each try waits for
// readers at most truncateWait, and between tries the connection is free
// for other writers (on the embedded fast path, intake), so that a
// truncation never holds it for the 10s busy timeout. After truncateTries
// busy tries it returns ErrCheckpointBusy.
func Truncate(ctx context.Context, db *sql.DB, schema string) error {
	pause := truncatePause
	for try := 1; ; try++ {
		busy, err := truncateOnce(ctx, db, schema)
		if err != nil || !busy {
			return err
		}
		if try == truncateTries {
			return fmt.Errorf("checkpoint %s: %w", schema, ErrCheckpointBusy)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("checkpoint %s: %w", schema, ctx.Err())
		case <-t.C:
		}
		pause *= 2
	}
}

// truncateOnce is one try of Truncate, on the connection pinned for it
// with a short busy timeout, restored before it goes back to the pool.
func truncateOnce(ctx context.Context, db *sql.DB, schema string) (busy bool, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", schema, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", truncateWait.Milliseconds())); err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", schema, err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); rerr != nil && err == nil {
			err = fmt.Errorf("checkpoint %s: restore the busy timeout: %w", schema, rerr)
		}
	}()
	var b, logFrames, checkpointed int
	if err := conn.QueryRowContext(ctx, "PRAGMA "+schema+".wal_checkpoint(TRUNCATE)").Scan(&b, &logFrames, &checkpointed); err != nil {
		return false, fmt.Errorf("checkpoint %s: %w", schema, err)
	}
	return b != 0, nil
}

// ErrCheckpointBusy means readers kept the WAL from being truncated; the
// next checkpoint finishes the job.
var ErrCheckpointBusy = errors.New("the write-ahead log is in use by a reader")

// OpenReader opens a pool of n read-only connections to a file.
func OpenReader(path string, n int) (*sql.DB, error) {
	db, err := sql.Open(driverName, "file:"+escapePath(path)+"?_journal_mode=WAL&_busy_timeout=10000&_query_only=1")
	if err != nil {
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}

// OpenReadOnly opens one connection that cannot write the file at all
// (mode=ro): not even the checkpoint SQLite runs when the last connection
// to a WAL file closes, so a tool that only looks (formd version) leaves
// the files byte for byte as they were. It fails on a missing file
// rather than create it.
func OpenReadOnly(path string) (*sql.DB, error) {
	db, err := sql.Open(driverName, "file:"+escapePath(path)+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		return nil, fmt.Errorf("open %s read-only: %w", path, err)
	}
	return single(db), nil
}
