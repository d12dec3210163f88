package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Copy makes dst a consistent copy of the database file src with SQLite's
// online backup API, while other processes go on writing src: the copy
// is read in one read transaction (one snapshot of the WAL), which in WAL
// mode never blocks a writer. dst must not exist; it is written with
// SQLite's own journal, so a crash leaves it incomplete but never looks
// like a finished file to Copy's caller, who renames it into place.
func Copy(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	// Not mode=ro: a read-only connection cannot make the shared-memory
	// file of a WAL database that no server has open. query_only keeps it
	// from writing anything else.
	sdb, err := sql.Open(driverName, "file:"+escapePath(src)+"?_busy_timeout=10000&_query_only=1")
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer sdb.Close()
	ddb, err := sql.Open(driverName, "file:"+escapePath(dst)+"?_busy_timeout=10000")
	if err != nil {
		return fmt.Errorf("open %s: %w", dst, err)
	}
	defer ddb.Close()
	sconn, err := sdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer sconn.Close()
	dconn, err := ddb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", dst, err)
	}
	defer dconn.Close()
	// One snapshot for the whole copy: a read transaction held on the
	// source connection, which the backup's steps read through. In WAL
	// mode it never blocks a writer, and a writer's commits do not
	// restart the copy, so it can go in steps: each step commits (and
	// syncs) what it wrote, so the copy never piles up gigabytes of
	// dirty pages that the server's own fsyncs would then wait behind.
	if _, err := sconn.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("copy %s: begin: %w", src, err)
	}
	defer sconn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") //nolint:errcheck // ends the read transaction
	var tables int
	if err := sconn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("copy %s: read: %w", src, err)
	}
	err = dconn.Raw(func(d any) error {
		return sconn.Raw(func(s any) error {
			b, err := d.(*sqlite3.SQLiteConn).Backup("main", s.(*sqlite3.SQLiteConn), "main")
			if err != nil {
				return err
			}
			steps := 0
			for {
				start := time.Now()
				done, err := b.Step(stepPages)
				if err != nil || done {
					return errors.Join(err, b.Finish())
				}
				// As long again idle as the step took: the copy takes at
				// most half of the disk's time, and the server's commits
				// the rest.
				select {
				case <-ctx.Done():
					return errors.Join(ctx.Err(), b.Finish())
				case <-time.After(time.Since(start)):
				}
				// A copy that restarts (it should not, in its own
				// snapshot) finishes in one step: that cannot restart.
				if steps++; steps > 4*(b.PageCount()/stepPages+1) {
					_, err := b.Step(-1)
					return errors.Join(err, b.Finish())
				}
			}
		})
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	// The copy keeps the source's WAL mode; fold its WAL into the file,
	// so the copy is one file.
	if _, err := dconn.ExecContext(ctx, "PRAGMA journal_mode = DELETE"); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// stepPages is how many pages one step of Copy copies: 16 MiB of 4 KiB
// pages.
const stepPages = 4096

// IsFull says whether err is SQLite's "database or disk is full".
func IsFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull
}

// OpenImmutable opens a database file that nothing writes (a backup) for
// reading, without making a WAL or shared-memory file beside it.
func OpenImmutable(path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db, err := sql.Open(driverName, "file:"+escapePath(path)+"?mode=ro&immutable=1")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// ReadVersion reads the schema version of a file that nothing writes (a
// backup) with query, which each kind of file answers from its own
// tables: the journal from its user_version, the store from its newest
// migration.
func ReadVersion(ctx context.Context, path, query string) (int, error) {
	db, err := OpenImmutable(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema version of %s: %w", path, err)
	}
	return v, nil
}

// IntegrityCheck runs PRAGMA integrity_check on a file that nothing
// writes, and returns what it found wrong (nothing when the file is
// sound).
func IntegrityCheck(ctx context.Context, path string) ([]string, error) {
	db, err := OpenImmutable(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("check %s: %w", path, err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check %s: %w", path, err)
	}
	return problems, nil
}
