package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// DirBytes is the embedded tier's bytes: the uploads directory
// (--data/uploads) with the parts of uploads being received (a file per
// upload, tusd's <id>.info beside it, and .part-* temporary files of
// plain posts being written), and the content-addressed objects of
// complete ones under objects/ (Dir). The stored names it lists are the
// parts' files and the ids of objects/ids; CheckContents goes through the
// content files themselves.
type DirBytes string

// ListBytes lists the parts directory's files and the ids that have
// objects.
func (d DirBytes) ListBytes(ctx context.Context, fn func(string, time.Time) error) error {
	if err := listFiles(ctx, string(d), fn); err != nil {
		return err
	}
	ids := filepath.Join(string(d), ObjectsDir, "ids")
	shards, err := os.ReadDir(ids)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list upload bytes: %w", err)
	}
	for _, sh := range shards {
		if !sh.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(ids, sh.Name()))
		if err != nil {
			return fmt.Errorf("list upload bytes: %w", err)
		}
		for _, e := range ents {
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
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// listFiles calls fn with the name and time of each file (not
// directory) in dir.
func listFiles(ctx context.Context, dir string, fn func(string, time.Time) error) error {
	ents, err := os.ReadDir(dir)
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

// HasBytes says the upload's bytes are there: its object's link to a
// content file, or a file an earlier release left named by its id (the
// parts directory's file of an upload still being received counts too:
// the audit asks only about complete ones). A name that is not an
// upload's (the lock, a .info) is looked for as a parts file.
func (d DirBytes) HasBytes(_ context.Context, id string) (bool, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return false, nil
	}
	if idOK(id) {
		sum, err := DirAt(string(d)).linked(id)
		if err != nil {
			return false, fmt.Errorf("look for upload bytes: %w", err)
		}
		if sum != "" {
			return exists(filepath.Join(DirAt(string(d)).idDir(id), sum))
		}
	}
	return exists(filepath.Join(string(d), id))
}

func exists(p string) (bool, error) {
	_, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look for upload bytes: %w", err)
	}
	return true, nil
}

// Where names the file or directory a stored name of ListBytes is: the
// parts directory's file, or the id's directory under objects/ids.
func (d DirBytes) Where(name string) string {
	p := filepath.Join(string(d), name)
	if _, err := os.Lstat(p); err != nil && idOK(name) {
		return DirAt(string(d)).idDir(name)
	}
	return p
}

// Content is one content file of the objects directory, as the audit
// finds it.
type Content struct {
	// Name is its path under the uploads directory.
	Name string
	// Linked says an upload id links to it.
	Linked bool
	// Damaged says its bytes no longer hash to its name (bit rot, or a
	// change by hand); Temporary a leftover of a write cut short.
	Damaged, Temporary bool
	Mod                time.Time
}

// ContentIndex is a content-addressed store whose files the audit checks
// one by one (DirBytes).
type ContentIndex interface {
	// CheckContents reads every content file (hashing its bytes) and
	// calls fn with what it found.
	CheckContents(ctx context.Context, fn func(Content) error) error
	// StillUnlinked looks at a content file again: true when it is
	// there and no id links to it.
	StillUnlinked(name string) (bool, error)
}

// CheckContents hashes every content file under objects/sha256.
func (d DirBytes) CheckContents(ctx context.Context, fn func(Content) error) error {
	root := filepath.Join(string(d), ObjectsDir, "sha256")
	shards, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list upload contents: %w", err)
	}
	for _, sh := range shards {
		ents, err := os.ReadDir(filepath.Join(root, sh.Name()))
		if err != nil {
			return fmt.Errorf("list upload contents: %w", err)
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			p := filepath.Join(root, sh.Name(), e.Name())
			fi, err := os.Lstat(p)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read upload contents: %w", err)
			}
			c := Content{Name: filepath.Join(ObjectsDir, "sha256", sh.Name(), e.Name()), Mod: fi.ModTime(), Linked: linkCount(fi) > 1}
			if !sumOK(e.Name()) || e.Name()[:2] != sh.Name() {
				c.Temporary = true
			} else {
				got, err := fileSHA256(p)
				if errors.Is(err, os.ErrNotExist) {
					continue // deleted meanwhile
				}
				if err != nil {
					return fmt.Errorf("read upload contents: %w", err)
				}
				c.Damaged = got != e.Name()
			}
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// StillUnlinked looks at a content file again.
func (d DirBytes) StillUnlinked(name string) (bool, error) {
	fi, err := os.Lstat(filepath.Join(string(d), name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look at upload contents: %w", err)
	}
	return linkCount(fi) == 1, nil
}

// fileSHA256 is the hex SHA-256 of a file's bytes.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
		if pm, ok := bytes.(postedMarks); ok && pm.posted(name) {
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
		if err := ci.CheckContents(ctx, func(c Content) error {
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
type postedMarks interface{ posted(id string) bool }

func (d DirBytes) posted(id string) bool {
	if !idOK(id) {
		return false
	}
	_, err := os.Stat(filepath.Join(string(d), PostedDir, id))
	return err == nil
}

// Open reads an upload's bytes, from the objects or, for an upload an
// earlier release completed that no server has moved yet, the parts
// directory.
func (d DirBytes) Open(id string) (io.ReadCloser, error) {
	if !idOK(id) {
		return nil, store.ErrUploadNotFound
	}
	o, err := DirAt(string(d)).Open(context.Background(), id)
	if errors.Is(err, errNoObject) {
		return nil, fmt.Errorf("upload %s: %w", id, os.ErrNotExist)
	}
	return o, err
}
