package backup

import (
	"context"

	"github.com/formd/formd/internal/journal"
)

// StoreFiles is what a backup needs of the embedded store's driver, each
// on a file by its path (sqlitestore.Files): this package knows no table
// of the store's.
type StoreFiles interface {
	// Copy copies the live file src to dst, consistent while a server
	// writes it.
	Copy(ctx context.Context, src, dst string) error
	// SchemaVersion reads the schema version a copy records.
	SchemaVersion(ctx context.Context, path string) (int, error)
	// EntryCounts counts a copy's entries by status.
	EntryCounts(ctx context.Context, path string) (map[string]int, error)
	// Uploads calls each with every complete upload of a copy that is
	// not claimed, or claimed by an entry whose data is kept, with its
	// content's SHA-256 (hex), size and whether an entry claimed it.
	Uploads(ctx context.Context, path string, each func(id, sha256 string, size int64, claimed bool) error) error
	// DropUploads removes from the (restored, not yet served) copy at
	// path the complete uploads no entry claims whose id kept does not
	// hold: the backup left their bytes out, and a record without its
	// bytes must not be claimed by a later submission.
	DropUploads(ctx context.Context, path string, kept map[string]bool) error
}

// JournalFiles is what a backup needs of the embedded journal's driver
// (sqlitejournal.Files).
type JournalFiles interface {
	Copy(ctx context.Context, src, dst string) error
	SchemaVersion(ctx context.Context, path string) (int, error)
	// EntryCount counts a copy's entries.
	EntryCount(ctx context.Context, path string) (int, error)
	// NamedUploads is the set of upload ids a copy's entries name, each
	// with the facts of a plain HTML post's file (nil for the others).
	NamedUploads(ctx context.Context, path string) (map[string]*journal.Posted, error)
}

// Drivers are the embedded drivers whose files a backup holds.
type Drivers struct {
	Store   StoreFiles
	Journal JournalFiles
}

// copier is the driver that copies and reads one database file.
type copier interface {
	Copy(ctx context.Context, src, dst string) error
	SchemaVersion(ctx context.Context, path string) (int, error)
}

// of is the driver of one of the backup's database files.
func (d Drivers) of(name string) copier {
	if name == StoreFile {
		return d.Store
	}
	return d.Journal
}
