package uploads

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
)

// FileAudit is what `formd audit` finds about files: claimed uploads
// whose bytes are missing (an entry pointing at nothing) and stored
// bytes that no entry or live upload references (bytes that should have
// been deleted, and may be someone's).
type FileAudit struct {
	// Uploads counts the upload records read; Claimed those an entry
	// whose data is kept claims.
	Uploads, Claimed int
	// Missing lists claimed uploads of kept entries whose bytes are not
	// stored.
	Missing []MissingFile
	// Orphans lists the names of stored files no upload record names;
	// leftovers of a plain post cut short older than an hour count too.
	Orphans []string
}

// MissingFile is a claimed upload without its bytes.
type MissingFile struct{ Upload, Entry string }

// OK says every claimed file is there and nothing else is.
func (a FileAudit) OK() bool { return len(a.Missing) == 0 && len(a.Orphans) == 0 }

// AuditStore lists the uploads (store.UploadHolds).
type AuditStore interface {
	UploadStates(ctx context.Context, after string, limit int) ([]store.UploadState, error)
}

// ByteIndex is where uploads' bytes are stored, as the audit reads it.
type ByteIndex interface {
	// ListBytes calls fn with the name and time of every stored file.
	ListBytes(ctx context.Context, fn func(name string, mod time.Time) error) error
	// HasBytes says an upload's bytes are stored.
	HasBytes(ctx context.Context, id string) (bool, error)
}

// DirBytes is the embedded tier's bytes: a directory (--data/uploads)
// with a file per upload, tusd's <id>.info beside it, and .part-*
// temporary files of plain posts being written.
type DirBytes string

// ListBytes lists the directory.
func (d DirBytes) ListBytes(ctx context.Context, fn func(string, time.Time) error) error {
	ents, err := os.ReadDir(string(d))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list upload bytes: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fmt.Errorf("list upload bytes: %w", err)
		}
		if err := fn(e.Name(), info.ModTime()); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// HasBytes says the upload's file is there.
func (d DirBytes) HasBytes(_ context.Context, id string) (bool, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return false, nil
	}
	_, err := os.Stat(filepath.Join(string(d), id))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look for upload bytes: %w", err)
	}
	return true, nil
}

// auditPage is how many upload records one read lists.
const auditPage = 1000

// AuditFiles compares the stored bytes with the upload records. The
// bytes are listed first, then the records: a record always exists
// before its bytes, so an upload made meanwhile is never taken for an
// orphan; a claimed upload's bytes are looked for when its record is
// read, and a file no record names is looked at again at the end, so
// that one deleted while the audit runs (beside a server) is not
// reported.
func AuditFiles(ctx context.Context, st AuditStore, bytes ByteIndex, now time.Time) (FileAudit, error) {
	var a FileAudit
	stored := map[string]time.Time{}
	if err := bytes.ListBytes(ctx, func(name string, mod time.Time) error {
		stored[name] = mod
		return nil
	}); err != nil {
		return a, err
	}
	var missing []MissingFile
	for after := ""; ; {
		page, err := st.UploadStates(ctx, after, auditPage)
		if err != nil {
			return a, fmt.Errorf("audit files: %w", err)
		}
		for _, u := range page {
			a.Uploads++
			delete(stored, u.ID)
			delete(stored, u.ID+".info")
			if u.Entry == "" || u.Erased || !u.Complete {
				continue
			}
			a.Claimed++
			ok, err := bytes.HasBytes(ctx, u.ID)
			if err != nil {
				return a, fmt.Errorf("audit files: %w", err)
			}
			if !ok {
				missing = append(missing, MissingFile{Upload: u.ID, Entry: u.Entry})
			}
		}
		if len(page) < auditPage {
			break
		}
		after = page[len(page)-1].ID
	}
	a.Missing = missing
	for name, mod := range stored {
		if strings.HasPrefix(name, ".part-") && now.Sub(mod) < time.Hour {
			continue // a plain post being written
		}
		// Looked at again: deleted since it was listed is not an orphan.
		if ok, err := bytes.HasBytes(ctx, name); err != nil {
			return a, fmt.Errorf("audit files: %w", err)
		} else if ok {
			a.Orphans = append(a.Orphans, name)
		}
	}
	slices.Sort(a.Orphans)
	return a, nil
}

// Open reads an upload's bytes.
func (d DirBytes) Open(id string) (*os.File, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return nil, store.ErrUploadNotFound
	}
	return os.Open(filepath.Join(string(d), id))
}
