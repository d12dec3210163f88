package pgstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/internal/store"
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
//
// A request that waits for a lock held by another instance asks it to
// let go (Ask: NOTIFY on the channel formd_upload_release, the schema
// and the upload id as the payload); each instance LISTENs on a second
// connection of its own (Asked).
type UploadLocks struct {
	cfg  *pgx.ConnConfig
	mu   sync.Mutex
	conn *pgx.Conn
	lost chan struct{} // closed when conn broke
	n    int           // locks held on conn

	listening sync.Once
	stop      chan struct{} // closed by close
	closed    bool
}

// releaseChannel is the channel of Ask and Asked.
const releaseChannel = "formd_upload_release"

var _ store.UploadLocker = (*Store)(nil)

// UploadLocks is the store's upload locks (one set per store).
func (s *Store) UploadLocks() store.UploadLocks {
	s.locksOnce.Do(func() { s.locks = &UploadLocks{cfg: s.pool.Config().ConnConfig.Copy(), stop: make(chan struct{})} })
	return s.locks
}

// uploadLockKey names an upload's lock, within the schema so that
// deployments sharing a database do not lock each other.
const uploadLockKey = `hashtextextended('formd-upload:' || coalesce(current_schema(), '') || ':' || $1, 0)`

// connect makes the lock connection if there is none. l.mu is held.
func (l *UploadLocks) connect(ctx context.Context) error {
	if l.conn != nil {
		return nil
	}
	if l.closed {
		return fmt.Errorf("the store is closed")
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return fmt.Errorf("connect for the upload locks: %w", err)
	}
	l.conn, l.lost, l.n = c, make(chan struct{}), 0
	go l.watch(c, l.lost)
	return nil
}

// TryLock takes the upload's lock if no other session holds it.
func (l *UploadLocks) TryLock(ctx context.Context, id string) (bool, <-chan struct{}, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.connect(ctx); err != nil {
		return false, nil, err
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
func (l *UploadLocks) watch(c *pgx.Conn, gone <-chan struct{}) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-gone:
			return
		case <-t.C:
		}
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

// Ask asks the session holding the upload's lock to release it.
func (l *UploadLocks) Ask(ctx context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.connect(ctx); err != nil {
		return err
	}
	if _, err := l.conn.Exec(ctx, `SELECT pg_notify('`+releaseChannel+`', coalesce(current_schema(), '') || ':' || $1)`, id); err != nil {
		l.broken()
		return fmt.Errorf("ask for an upload's lock: %w", err)
	}
	return nil
}

// Asked calls f with the id of each upload whose lock a session of the
// same schema asks for, listening on a connection of its own (connected
// again a second after it breaks) until the store is closed. Only the
// first call's f is kept.
func (l *UploadLocks) Asked(f func(id string)) {
	l.listening.Do(func() { go l.listen(f) })
}

func (l *UploadLocks) listen(f func(id string)) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-l.stop; cancel() }()
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, f)
		if ctx.Err() != nil {
			return
		}
		_ = err // connected again below; the locks' requests wait meanwhile
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (l *UploadLocks) listenOnce(ctx context.Context, f func(id string)) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := pgx.ConnectConfig(cctx, l.cfg)
	cancel()
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var schema string
	if err := c.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `LISTEN `+releaseChannel); err != nil {
		return err
	}
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if id, ok := strings.CutPrefix(n.Payload, schema+":"); ok {
			f(id)
		}
	}
}

// close ends the connections, and the locks with them.
func (l *UploadLocks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
	l.broken()
}
