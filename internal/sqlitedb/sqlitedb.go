// Package sqlitedb is how formd opens its SQLite files (the embedded
// journal and the embedded store): WAL mode, synchronous=FULL so that a
// commit is on disk when it returns, one write connection per file (SQLite
// has one writer; a pool would only queue on its lock) and a pool of
// read-only connections.
package sqlitedb

import (
	"database/sql"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// driverName is the database/sql driver with formd's per-connection
// settings applied on every new connection.
const driverName = "sqlite3-formd"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		// Checkpoint every ~40 MiB of WAL instead of the default 4 MiB: a
		// page rewritten by many commits (the last leaf of an index) is
		// copied to the database once per checkpoint, so fewer checkpoints
		// cost less CPU and I/O at the same durability.
		_, err := c.Exec("PRAGMA wal_autocheckpoint = 10000", nil)
		return err
	}})
}

// OpenWriter opens the single write connection of a file, creating it.
// Transactions begin IMMEDIATE, so a writer never fails half-way on a lock.
func OpenWriter(path string) (*sql.DB, error) {
	db, err := sql.Open(driverName, "file:"+path+
		"?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_txlock=immediate&_cache_size=-65536")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// OpenReader opens a pool of n read-only connections to a file.
func OpenReader(path string, n int) (*sql.DB, error) {
	db, err := sql.Open(driverName, "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_query_only=1")
	if err != nil {
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	return db, nil
}
