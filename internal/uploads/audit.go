package uploads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
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
	// Unlinked lists content files (paths under the uploads directory)
	// that no upload links to: bytes a deletion cut short left. Damaged
	// lists content files whose bytes no longer hash to their name.
	// Both only for a content-addressed store (ContentIndex).
	Unlinked, Damaged []string
	// Deleting counts the uploads whose records are gone and whose bytes
	// are queued for deletion (store.UploadDeletions): the next pass
	// deletes them; their bytes are not orphans.
	Deleting int
	// FailedDeletions are queued deletions that were tried and failed:
	// bytes that should be gone and are still there, with why.
	FailedDeletions []store.UploadDeletion
}

// MissingFile is a claimed upload without its bytes.
type MissingFile struct{ Upload, Entry string }

// OK says every claimed file is there and nothing else is.
func (a FileAudit) OK() bool {
	return len(a.Missing) == 0 && len(a.Orphans) == 0 && len(a.Unlinked) == 0 && len(a.Damaged) == 0 && len(a.FailedDeletions) == 0
}

// AuditStore lists the uploads (store.UploadHolds) and the deletions of
// their bytes (store.UploadDeletions).
type AuditStore interface {
	UploadStates(ctx context.Context, after string, limit int) ([]store.UploadState, error)
	PendingDeletions(ctx context.Context, limit int) ([]store.UploadDeletion, error)
}

// maxAuditDeletions bounds the queued deletions one audit reads: a queue
// longer than this is a problem the audit reports as it is.
const maxAuditDeletions = 100000

// ByteIndex is where uploads' bytes are stored, as the audit reads it.
type ByteIndex interface {
	// ListBytes calls fn with the name and time of every stored file.
	ListBytes(ctx context.Context, fn func(name string, mod time.Time) error) error
	// HasBytes says an upload's bytes are stored.
	HasBytes(ctx context.Context, id string) (bool, error)
}

// ContentIndex is a content-addressed store whose files the audit checks
// one by one (dirobjects.DirBytes).
type ContentIndex interface {
	// CheckContents reads every content file (hashing its bytes) and
	// calls fn with what it found.
	CheckContents(ctx context.Context, fn func(dirobjects.Content) error) error
	// StillUnlinked looks at a content file again: true when it is
	// there and no id links to it.
	StillUnlinked(name string) (bool, error)
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
	// Read after the records: an upload expired meanwhile is queued here
	// before its bytes go, so its bytes are not taken for an orphan.
	queued, err := st.PendingDeletions(ctx, maxAuditDeletions)
	if err != nil {
		return a, fmt.Errorf("audit files: %w", err)
	}
	a.Deleting = len(queued)
	for _, d := range queued {
		delete(stored, d.ID)
		delete(stored, d.ID+".info")
		if d.Attempts > 0 {
			a.FailedDeletions = append(a.FailedDeletions, d)
		}
	}
	for name, mod := range stored {
		if strings.HasPrefix(name, ".part-") && now.Sub(mod) < time.Hour {
			continue // a plain post being written
		}
		if pm, ok := bytes.(postedMarks); ok && pm.Posted(name) {
			continue // a plain post's file its decision has not recorded yet (Put)
		}
		// Looked at again: deleted since it was listed is not an orphan.
		if ok, err := bytes.HasBytes(ctx, name); err != nil {
			return a, fmt.Errorf("audit files: %w", err)
		} else if ok {
			a.Orphans = append(a.Orphans, name)
		}
	}
	slices.Sort(a.Orphans)
	if ci, ok := bytes.(ContentIndex); ok {
		var unlinked []string
		if err := ci.CheckContents(ctx, func(c dirobjects.Content) error {
			switch {
			case c.Temporary && now.Sub(c.Mod) < time.Hour:
				// a content file being written
			case c.Damaged:
				a.Damaged = append(a.Damaged, c.Name)
			case !c.Linked || c.Temporary:
				unlinked = append(unlinked, c.Name)
			}
			return nil
		}); err != nil {
			return a, fmt.Errorf("audit files: %w", err)
		}
		// Looked at again: a content file a Keep had written but not yet
		// linked when it was read is linked now.
		for _, name := range unlinked {
			if ok, err := ci.StillUnlinked(name); err != nil {
				return a, fmt.Errorf("audit files: %w", err)
			} else if ok {
				a.Unlinked = append(a.Unlinked, name)
			}
		}
		slices.Sort(a.Damaged)
		slices.Sort(a.Unlinked)
	}
	return a, nil
}

// postedMarks is a ByteIndex that tells the bytes of a plain post's file
// not yet recorded by a decision (Put's mark) from an orphan.
type postedMarks interface{ Posted(id string) bool }
