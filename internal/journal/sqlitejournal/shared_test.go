package sqlitejournal_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/sqlitedb"
)

// sharedJournal is the journal on the writer it shares with the store,
// closing the writer after itself as the store would.
type sharedJournal struct {
	*sqlitejournal.Journal
	w *sql.DB
}

func (j sharedJournal) Close() error { return errors.Join(j.Journal.Close(), j.w.Close()) }

// The conformance suite on the shared writer of the embedded fast path
// (server.openEmbedded), as TestConformance runs it on the journal's own.
func TestConformanceShared(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) func() journal.Journal {
		dir := t.TempDir()
		path := filepath.Join(dir, "journal.db")
		return func() journal.Journal {
			w, err := sqlitedb.OpenShared(path, filepath.Join(dir, "store.db"))
			if err != nil {
				t.Fatalf("open the shared writer: %v", err)
			}
			j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: path, Writer: w})
			if err != nil {
				w.Close()
				t.Fatalf("open: %v", err)
			}
			return sharedJournal{j, w}
		}
	})
}
