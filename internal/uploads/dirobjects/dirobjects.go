// Package dirobjects is the uploads' embedded tier: the bytes of
// complete uploads in a content-addressed directory under --data
// (uploads.Objects), one content file per SHA-256, linked by upload id.
package dirobjects

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/uploads/tier"
)

// Dir is the embedded tier's store of complete uploads' bytes, under
// --data/uploads/objects, content-addressed by SHA-256:
//
//	objects/sha256/ab/abcdef…          the bytes, one file per content (0600)
//	objects/ids/01/0123…/abcdef…       one hard link per upload id to its content
//	objects/lock                       flock'd around every change
//
// Identical files (the same photo in two entries) are stored once: the
// content file's link count is its reference count (itself plus one per
// upload id), so Open(id) reads the id's directory and needs no store
// read, and Delete(id) removes the id's link and then the content file if
// no other id links to it. Keep and Delete hold a mutex and an flock on
// objects/lock, so that a Keep and a Delete of the same content (two
// entries with one photo, one forgotten) are ordered, in one process and
// across processes (a command line beside the server): a content file is
// never removed while an id links to it, and a Keep after its removal
// writes it again.
//
// A content file is written to a temporary name in its own directory
// (a hard link to the complete upload's file when both are on one file
// system, as they are under --data; a copy otherwise), fsync'd, renamed,
// and its directory fsync'd. Uploads completed by releases before this
// layout are files named by id in --data/uploads itself; Migrate moves
// them in, and Open reads them there until it has.
type Dir struct {
	root  string // --data/uploads/objects
	parts string // --data/uploads, where tusd writes and old releases kept bytes

	mu       sync.Mutex
	writable bool
	// betweenCheckAndLink, in tests, runs once a Keep found the content
	// file there and before it links the id to it.
	betweenCheckAndLink func()
}

// ObjectsDir is the directory under the uploads directory that holds the
// complete uploads' bytes.
const ObjectsDir = "objects"

// OpenDir opens (making it 0700 if missing) the store of complete
// uploads' bytes under the uploads directory (--data/uploads).
func OpenDir(uploadsDir string) (*Dir, error) {
	d := &Dir{root: filepath.Join(uploadsDir, ObjectsDir), parts: uploadsDir}
	for _, p := range []string{uploadsDir, d.root, filepath.Join(d.root, "sha256"), filepath.Join(d.root, "ids")} {
		if err := mkdirSynced(p); err != nil {
			return nil, tier.StorageErr("make the uploads directory", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(d.root, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, tier.StorageErr("open the uploads lock", err)
	}
	d.writable = true
	return d, f.Close()
}

// DirAt reads the store of complete uploads' bytes under the uploads
// directory without making anything there, for the commands that only
// read it (audit, export, backup); it cannot Keep or Delete.
func DirAt(uploadsDir string) *Dir {
	return &Dir{root: filepath.Join(uploadsDir, ObjectsDir), parts: uploadsDir}
}

// ContentPath is where the bytes of that SHA-256 (hex) are kept.
func (d *Dir) ContentPath(sum string) string {
	return filepath.Join(d.root, "sha256", sum[:2], sum)
}

func (d *Dir) idDir(id string) string { return filepath.Join(d.root, "ids", id[:2], id) }

// idOK says an id can be a name in the directory.
func idOK(id string) bool {
	return len(id) >= 2 && id != ".." && !strings.ContainsAny(id, `/\`) && !strings.HasPrefix(id, ".")
}

// sumOK says a name is a hex SHA-256.
func sumOK(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// locked runs fn holding the mutex and the flock of objects/lock (opened
// each time, so that no descriptor stays open on --data).
func (d *Dir) locked(fn func() error) error {
	if !d.writable {
		return errors.New("the uploads directory was opened only to read")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(d.root, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return tier.StorageErr("open the uploads lock", err)
	}
	defer f.Close()
	if err := flock(f); err != nil {
		return fmt.Errorf("lock the uploads directory: %w", err)
	}
	defer funlock(f)
	return fn()
}

// Keep makes the complete file at path the bytes of upload id. The file
// at path is left where it is (the caller removes it).
func (d *Dir) Keep(ctx context.Context, id, path string, size int64, sum [32]byte) error {
	if !idOK(id) {
		return fmt.Errorf("keep upload bytes: %q is not an upload id", id)
	}
	h := hex.EncodeToString(sum[:])
	return d.locked(func() error { return d.keep(id, h, path, size) })
}

// Link makes upload id reference the content of that SHA-256 (hex),
// which must be kept already (a restore: the content files first, then
// the ids).
func (d *Dir) Link(id, sum string) error {
	if !idOK(id) || !sumOK(sum) {
		return fmt.Errorf("link upload %q to %q: not an upload id and a SHA-256", id, sum)
	}
	return d.locked(func() error { return d.keep(id, sum, "", -1) })
}

func (d *Dir) keep(id, sum, path string, size int64) error {
	if have, err := d.linked(id); err != nil {
		return err
	} else if have == sum {
		return nil // kept already
	} else if have != "" {
		return fmt.Errorf("keep upload bytes: upload %s is kept with other bytes (SHA-256 %s, not %s)", id, have, sum)
	}
	c := d.ContentPath(sum)
	if _, err := os.Lstat(c); errors.Is(err, fs.ErrNotExist) {
		if path == "" {
			return fmt.Errorf("link upload %s: no content file %s", id, c)
		}
		if err := d.putContent(path, c, size); err != nil {
			return tier.StorageErr("keep upload bytes", err)
		}
	} else if err != nil {
		return fmt.Errorf("keep upload bytes: %w", err)
	} else if d.betweenCheckAndLink != nil {
		d.betweenCheckAndLink()
	}
	ld := d.idDir(id)
	if err := mkdirSynced(filepath.Dir(ld)); err != nil {
		return tier.StorageErr("keep upload bytes", err)
	}
	if err := mkdirSynced(ld); err != nil {
		return tier.StorageErr("keep upload bytes", err)
	}
	if err := os.Link(c, filepath.Join(ld, sum)); err != nil && !errors.Is(err, fs.ErrExist) {
		return tier.StorageErr("keep upload bytes", err)
	}
	return tier.StorageErr("keep upload bytes", syncPath(ld))
}

// putContent writes the file at src as the content file c: a temporary
// name beside it (a hard link to src, or a copy where links cannot be
// made), fsync'd, renamed, the directory fsync'd.
func (d *Dir) putContent(src, c string, size int64) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if size >= 0 && fi.Size() != size {
		return fmt.Errorf("the file has %d bytes, the upload %d", fi.Size(), size)
	}
	shard := filepath.Dir(c)
	if err := mkdirSynced(shard); err != nil {
		return err
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(shard, ".tmp-"+hex.EncodeToString(rnd[:]))
	defer os.Remove(tmp) // gone after the rename
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			return err
		}
	} else if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, c); err != nil {
		return err
	}
	return syncPath(shard)
}

// copyFile copies src to a new file dst (0600), fsync'd.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// linked is the SHA-256 (hex) upload id links to, "" for none.
func (d *Dir) linked(id string) (string, error) {
	ents, err := os.ReadDir(d.idDir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read upload %s: %w", id, err)
	}
	for _, e := range ents {
		if sumOK(e.Name()) {
			return e.Name(), nil
		}
	}
	return "", nil
}

// Open reads upload id's bytes: from its link, or, for an upload an
// earlier release completed and Migrate has not moved yet, from its file
// in the parts directory.
func (d *Dir) Open(ctx context.Context, id string) (io.ReadSeekCloser, error) {
	if !idOK(id) {
		return nil, tier.ErrNoObject
	}
	sum, err := d.linked(id)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(d.idDir(id), sum)
	if sum == "" {
		p = filepath.Join(d.parts, id)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, tier.ErrNoObject
	}
	return f, err
}

// Delete removes upload id's link, and its content file when no other
// upload links to it. No error when there is none.
func (d *Dir) Delete(ctx context.Context, id string) error {
	if !idOK(id) {
		return nil
	}
	err := d.locked(func() error {
		ld := d.idDir(id)
		ents, err := os.ReadDir(ld)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := os.Remove(filepath.Join(ld, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if !sumOK(e.Name()) {
				continue
			}
			c := d.ContentPath(e.Name())
			fi, err := os.Lstat(c)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			// Only the content's own name is left: no other id links to it.
			if LinkCount(fi) == 1 {
				if err := os.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				if err := syncPath(filepath.Dir(c)); err != nil {
					return err
				}
			}
		}
		if err := os.Remove(ld); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return syncPath(filepath.Dir(ld))
	})
	if err != nil {
		return fmt.Errorf("delete upload bytes: %w", err)
	}
	return nil
}

// Migrate moves the uploads that earlier releases completed — files named
// by id in the parts directory, with tusd's <id>.info beside them — into
// the content-addressed layout, and removes the parts of uploads whose
// bytes are kept already (a stop between the keeping and the removal).
// sumOf gives a complete upload's SHA-256 from the store, ok false for an
// upload that is not complete (still being received: it stays). Each
// upload is kept (a hard link, durable) before its old files go, so a
// stop anywhere leaves its bytes readable in one place or the other, and
// running it again finishes. It returns how many uploads it moved.
func (d *Dir) Migrate(ctx context.Context, sumOf func(ctx context.Context, id string) (sum [32]byte, ok bool, err error)) (int, error) {
	ents, err := os.ReadDir(d.parts)
	if err != nil {
		return 0, fmt.Errorf("migrate uploads: %w", err)
	}
	n := 0
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".info")
		if !ok || e.IsDir() || !idOK(id) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
		sum, complete, err := sumOf(ctx, id)
		if err != nil {
			return n, fmt.Errorf("migrate upload %s: %w", id, err)
		}
		if !complete {
			continue
		}
		bin := filepath.Join(d.parts, id)
		have, err := d.linked(id)
		if err != nil {
			return n, err
		}
		if have == "" {
			fi, err := os.Stat(bin)
			if errors.Is(err, fs.ErrNotExist) {
				continue // no bytes to move: the audit reports it if it is claimed
			}
			if err != nil {
				return n, fmt.Errorf("migrate upload %s: %w", id, err)
			}
			if err := d.Keep(ctx, id, bin, fi.Size(), sum); err != nil {
				return n, fmt.Errorf("migrate upload %s: %w", id, err)
			}
			n++
		}
		for _, p := range []string{bin, filepath.Join(d.parts, e.Name())} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return n, fmt.Errorf("migrate upload %s: %w", id, err)
			}
		}
	}
	if err := syncPath(d.parts); err != nil {
		return n, fmt.Errorf("migrate uploads: %w", err)
	}
	return n, nil
}

// mkdirSynced makes a 0700 directory if it is missing, and fsyncs its
// parent when it made it.
func mkdirSynced(p string) error {
	err := os.Mkdir(p, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return syncPath(filepath.Dir(p))
}

// syncPath fsyncs a file or a directory.
func syncPath(p string) error {
	if err := atomicfile.SyncDir(p); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
	}
	return nil
}
