package sqlitejournal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/sqlitedb"
)

// Keeping the file in bounds: its size and limit, whether it takes
// writes, pruning and forgetting entries.

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
