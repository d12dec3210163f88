package dirobjects

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/tier"
)

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
	if err := listNames(ctx, string(d), true, fn); err != nil {
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
		if err := listNames(ctx, filepath.Join(ids, sh.Name()), false, fn); err != nil {
			return err
		}
	}
	return nil
}

// listNames calls fn with the name and time of each entry of dir (of
// each file, not directory, with filesOnly), stopping with ctx.
func listNames(ctx context.Context, dir string, filesOnly bool, fn func(string, time.Time) error) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list upload bytes: %w", err)
	}
	for _, e := range ents {
		if filesOnly && e.IsDir() {
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
			c := Content{Name: filepath.Join(ObjectsDir, "sha256", sh.Name(), e.Name()), Mod: fi.ModTime(), Linked: LinkCount(fi) > 1}
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
	return LinkCount(fi) == 1, nil
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

// PostedDir is the directory, under the uploads directory, of the marks
// a plain post's file carries until a decision records its upload
// (uploads.Service.Put writes them; the audit and the expiry pass read
// them).
const PostedDir = "posted"

// Posted reports whether id's bytes carry a plain post's mark: not yet
// recorded by a decision, so not an orphan.
func (d DirBytes) Posted(id string) bool {
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
	if errors.Is(err, tier.ErrNoObject) {
		return nil, fmt.Errorf("upload %s: %w", id, os.ErrNotExist)
	}
	return o, err
}
