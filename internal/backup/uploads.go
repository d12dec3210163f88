package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/uploads/dirobjects"
)

// UploadsDir is the directory of a backup that holds the uploads' bytes,
// one file per content named by its SHA-256: uploads/ab/abcdef….
const UploadsDir = "uploads"

// Upload is one content file of a backup: the bytes of the uploads IDs,
// named by their SHA-256 (hex), so verify checks the name too.
type Upload struct {
	SHA256 string   `json:"sha256"`
	Size   int64    `json:"size"`
	IDs    []string `json:"uploads"`
}

// path is where the content is in a backup.
func (u Upload) path(dir string) string {
	return filepath.Join(dir, UploadsDir, u.SHA256[:2], u.SHA256)
}

// referenced is one upload the store's copy references: claimed by an
// entry whose data is kept, or not claimed yet but named by an entry of
// the journal's copy (journaled, not yet decided when the store was
// copied: its restore decides it, and the file must be there). Uploads no
// entry names are not copied (a stranger could fill the backups with
// them, issue 30); after a restore a submission naming one is answered
// upload-not-found and its client uploads the file again.
//
// A file of a plain HTML post has no record before its entry's decision
// (journal.Posted): one the store's copy does not record is referenced by
// the facts its entry carries, and the restore's decision of that entry
// records it. Such a file found gone was an entry's decided since, whose
// upload expired or was erased: it is left out without a word.
type referenced struct {
	id, sum string
	size    int64
	posted  bool
}

// referencedUploads reads the uploads a store copy references.
func referencedUploads(ctx context.Context, d Drivers, storeCopy, journalCopy string) ([]referenced, error) {
	named, err := d.Journal.NamedUploads(ctx, journalCopy)
	if err != nil {
		return nil, err
	}
	var out []referenced
	recorded := map[string]bool{}
	err = d.Store.Uploads(ctx, storeCopy, func(id, sum string, size int64, claimed bool) error {
		recorded[id] = true
		if _, ok := named[id]; claimed || ok {
			out = append(out, referenced{id: id, sum: sum, size: size})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(named)) {
		if p := named[id]; p != nil && !recorded[id] {
			out = append(out, referenced{id: id, sum: p.SHA256, size: p.Size, posted: true})
		}
	}
	return out, nil
}

// uploadsReport is what copying the uploads' bytes found.
type uploadsReport struct {
	files []Upload
	// gone are the uploads whose bytes were erased (forget, retention,
	// expiry) after the store was copied; damaged those whose bytes no
	// longer have their SHA-256.
	gone, damaged []string
	written       []string
}

// copyUploads copies into the backup the bytes of every upload the
// store's copy references, from the data directory's content files (or,
// for an upload an earlier release completed that no server has moved
// yet, its file named by id). A file already in an earlier backup
// (linkFrom, with the same name and size) is hard-linked from there
// rather than copied: content files never change.
func copyUploads(ctx context.Context, data, to string, refs []referenced, linkFrom string, need int64, progress func(Upload)) (uploadsReport, error) {
	var rep uploadsReport
	byContent := map[string]*Upload{}
	posted := map[string]bool{}
	for _, r := range refs {
		if r.posted {
			posted[r.id] = true
		}
		u := byContent[r.sum]
		if u == nil {
			u = &Upload{SHA256: r.sum, Size: r.size}
			byContent[r.sum] = u
		}
		u.IDs = append(u.IDs, r.id)
	}
	sums := slices.Sorted(maps.Keys(byContent))
	live := dirobjects.DirAt(filepath.Join(data, "uploads"))
	dirs := map[string]bool{}
	for _, s := range sums {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		u := byContent[s]
		if len(s) != 64 {
			rep.damaged = append(rep.damaged, u.IDs...)
			continue
		}
		srcs := []string{live.ContentPath(s)}
		for _, id := range u.IDs {
			srcs = append(srcs, filepath.Join(data, "uploads", id))
		}
		dst := u.path(to)
		if !dirs[filepath.Dir(dst)] {
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				return rep, writeError(to, need, err)
			}
			dirs[filepath.Dir(dst)] = true
		}
		if linkFrom != "" && linkEarlier(u.path(linkFrom), dst, u.SHA256, u.Size) {
			rep.written = append(rep.written, dst)
			rep.files = append(rep.files, *u)
			if progress != nil {
				progress(*u)
			}
			continue
		}
		ok, err := copyContent(srcs, dst, s, u.Size, to, need)
		if err != nil {
			return rep, err
		}
		switch ok {
		case copied:
			rep.written = append(rep.written, dst)
			rep.files = append(rep.files, *u)
			if progress != nil {
				progress(*u)
			}
		case gone:
			for _, id := range u.IDs {
				if !posted[id] {
					rep.gone = append(rep.gone, id)
				}
			}
		case damaged:
			rep.damaged = append(rep.damaged, u.IDs...)
		}
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return rep, writeError(to, need, err)
		}
	}
	if len(dirs) > 0 {
		if err := atomicfile.SyncDir(filepath.Join(to, UploadsDir)); err != nil {
			return rep, writeError(to, need, err)
		}
	}
	slices.Sort(rep.gone)
	slices.Sort(rep.damaged)
	return rep, nil
}

// linkEarlier hard-links an earlier backup's copy of a content file
// once its bytes are read again and have their SHA-256 (a file damaged
// on the backup disk since is copied afresh instead, from --data); it
// says whether it did.
func linkEarlier(src, dst, sum string, size int64) bool {
	fi, err := os.Lstat(src)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	if n, got, err := fileSum(src); err != nil || n != size || got != sum {
		return false
	}
	return os.Link(src, dst) == nil
}

type copyResult int

const (
	copied copyResult = iota
	gone
	damaged
)

// copyContent copies the first of srcs that exists to dst, through a
// synced temporary file, checking that its bytes have the SHA-256 sum.
func copyContent(srcs []string, dst, sum string, size int64, to string, need int64) (copyResult, error) {
	var in *os.File
	for _, p := range srcs {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read upload bytes %s: %w", p, err)
		}
		in = f
		break
	}
	if in == nil {
		return gone, nil
	}
	defer in.Close()
	tmp := dst + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, writeError(to, need, err)
	}
	defer os.Remove(tmp) //nolint:errcheck // gone after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), in)
	if err != nil {
		out.Close()
		return 0, writeError(to, need, fmt.Errorf("copy upload bytes %s: %w", in.Name(), err))
	}
	if hex.EncodeToString(h.Sum(nil)) != sum || n != size {
		out.Close()
		return damaged, nil
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, writeError(to, need, err)
	}
	if err := out.Close(); err != nil {
		return 0, writeError(to, need, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, writeError(to, need, err)
	}
	return copied, nil
}

// verifyUploads checks each content file of a backup: there, of its size,
// its bytes hashing to its name.
func verifyUploads(dir string, m Manifest) []string {
	var problems []string
	for _, u := range m.Uploads {
		if len(u.SHA256) != 64 || hex.EncodeToString(mustHex(u.SHA256)) != u.SHA256 {
			problems = append(problems, fmt.Sprintf("the manifest names an upload file that is not a SHA-256: %q", u.SHA256))
			continue
		}
		p := u.path(dir)
		size, sum, err := fileSum(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, fmt.Sprintf("%s is missing (the bytes of upload %s)", p, u.IDs[0]))
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s cannot be read: %v", p, err))
		case size != u.Size:
			problems = append(problems, fmt.Sprintf("%s has %d bytes, the manifest says %d", p, size, u.Size))
		case sum != u.SHA256:
			problems = append(problems, fmt.Sprintf("%s does not have the SHA-256 it is named by (it was changed or damaged)", p))
		}
	}
	return problems
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// restoreUploads puts a backup's content files into the data directory's
// objects and links each upload id to its content.
func restoreUploads(from, data string, m Manifest) error {
	if len(m.Uploads) == 0 {
		return nil
	}
	d, err := dirobjects.OpenDir(filepath.Join(data, "uploads"))
	if err != nil {
		return fmt.Errorf("restore the uploads: %w", err)
	}
	for _, u := range m.Uploads {
		dst := d.ContentPath(u.SHA256)
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fmt.Errorf("restore the uploads: %w", err)
		}
		if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
			if err := installFile(u.path(from), dst, File{Name: u.SHA256, Size: u.Size, SHA256: u.SHA256}); err != nil {
				return err
			}
		}
		for _, id := range u.IDs {
			if err := d.Link(id, u.SHA256); err != nil {
				return fmt.Errorf("restore the uploads: %w", err)
			}
		}
	}
	return nil
}
