package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// UploadLocks are the locks the uploads of a deployment on PostgreSQL
// are written under (uploads.CrossLocks): session-level advisory locks,
// all of this instance's on one connection of their own (made with the
// pool's settings, outside the pool, so that a hundred uploads being
// sent take one connection and never the pool's). A lock goes with
// Unlock, or with the connection: when it breaks (a query on it fails,
// or the ping every few seconds while locks are held) every lock held
// is reported lost, and the next TryLock connects again; an instance
// that dies takes its locks with it.
type UploadLocks struct {
	cfg  *pgx.ConnConfig
	mu   sync.Mutex
	conn *pgx.Conn
	lost chan struct{} // closed when conn broke
	n    int           // locks held on conn
}

// UploadLocks is the store's upload locks (one set per store).
func (s *Store) UploadLocks() *UploadLocks {
	s.locksOnce.Do(func() { s.locks = &UploadLocks{cfg: s.pool.Config().ConnConfig.Copy()} })
	return s.locks
}

// uploadLockKey names an upload's lock, within the schema so that
// deployments sharing a database do not lock each other.
const uploadLockKey = `hashtextextended('formd-upload:' || coalesce(current_schema(), '') || ':' || $1, 0)`

// TryLock takes the upload's lock if no other session holds it.
func (l *UploadLocks) TryLock(ctx context.Context, id string) (bool, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c, err := pgx.ConnectConfig(cctx, l.cfg)
		cancel()
		if err != nil {
			return false, nil, fmt.Errorf("connect for the upload locks: %w", err)
		}
		l.conn, l.lost, l.n = c, make(chan struct{}), 0
		go l.watch(c)
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+uploadLockKey+`)`, id).Scan(&ok); err != nil {
		l.broken()
		return false, nil, fmt.Errorf("take an upload's lock: %w", err)
	}
	if ok {
		l.n++
	}
	return ok, l.lost, nil
}

// Unlock releases the upload's lock; a lock whose connection broke is
// released already.
func (l *UploadLocks) Unlock(ctx context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	var ok bool
	if err := l.conn.QueryRow(ctx, `SELECT pg_advisory_unlock(`+uploadLockKey+`)`, id).Scan(&ok); err != nil {
		l.broken()
		return fmt.Errorf("release an upload's lock: %w", err)
	}
	if ok {
		l.n--
	}
	return nil
}

// broken drops the connection (the server releases its locks) and tells
// the holders. l.mu is held.
func (l *UploadLocks) broken() {
	if l.conn == nil {
		return
	}
	c := l.conn
	l.conn = nil
	close(l.lost)
	go c.Close(context.Background())
}

// watch pings the connection while it holds locks, so that a connection
// lost while no request asks is noticed in seconds.
func (l *UploadLocks) watch(c *pgx.Conn) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for range t.C {
		l.mu.Lock()
		if l.conn != c {
			l.mu.Unlock()
			return
		}
		if l.n > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := c.Ping(ctx); err != nil {
				l.broken()
			}
			cancel()
		}
		l.mu.Unlock()
	}
}

// close ends the connection, and the locks with it.
func (l *UploadLocks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.broken()
}
