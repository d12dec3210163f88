package sqlitejournal

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/sqlitedb"
)

// Files is the journal's file as a backup reads it (package backup's
// JournalFiles): copied live, then read from the copy, which nothing
// writes. It knows the tables of every release's journal, so that a data
// directory an earlier release wrote is backed up as it is.
type Files struct{}

// Copy copies the live journal file src to dst, consistent while a
// server writes it.
func (Files) Copy(ctx context.Context, src, dst string) error { return sqlitedb.Copy(ctx, src, dst) }

// SchemaVersion reads the schema version the journal file at path
// records (0 for the releases before the journal counted versions).
func (Files) SchemaVersion(ctx context.Context, path string) (int, error) {
	return sqlitedb.ReadVersion(ctx, path, `PRAGMA user_version`)
}

// EntryCount counts the entries of the journal file at path: in
// journal_entries, or in entries for a file of a release before the
// journal's tables were renamed (migration 3).
func (Files) EntryCount(ctx context.Context, path string) (int, error) {
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	table := "journal_entries"
	var renamed int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'journal_entries'`).Scan(&renamed); err != nil {
		return 0, fmt.Errorf("count the journal's entries: %w", err)
	}
	if renamed == 0 {
		table = "entries"
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the journal's entries: %w", err)
	}
	return n, nil
}

// NamedUploads is the set of upload ids that the entries of the journal
// file at path name (their checks, journal.Checks): a backup keeps the
// bytes of an upload a journaled entry names even before its decision
// claims it. A file of a release before entries carried checks (journal
// migration 5) names none: those releases held the uploads in the store.
// A plain HTML post's file comes with the facts its decision records it
// by (journal.Posted), nil for the others.
func (Files) NamedUploads(ctx context.Context, path string) (map[string]*journal.Posted, error) {
	db, err := sqlitedb.OpenImmutable(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var has int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('journal_entries') WHERE name = 'checks'`).Scan(&has); err != nil {
		return nil, fmt.Errorf("list the journal's uploads: %w", err)
	}
	named := map[string]*journal.Posted{}
	if has == 0 {
		return named, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT seq, checks FROM journal_entries WHERE checks IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("list the journal's uploads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return nil, fmt.Errorf("list the journal's uploads: %w", err)
		}
		var e journal.Entry
		if err := journal.SetChecks(&e, b); err != nil {
			return nil, fmt.Errorf("list the journal's uploads: entry %d: %w", seq, err)
		}
		for _, u := range e.Uploads {
			if named[u.ID] == nil {
				named[u.ID] = u.Posted
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the journal's uploads: %w", err)
	}
	return named, nil
}
