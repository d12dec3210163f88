package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
)

// Put keeps one file of a plain HTML post (a multipart/form-data part)
// for the form's field, streaming it to disk (a temporary file, fsync'd,
// renamed) so that the body is never held in memory, and returns the
// upload its entry names, with the facts its decision records it by
// (journal.Posted). Put makes no store call (DESIGN invariant 12: the
// journal append is intake's only durable write to the store's side
// before it answers): the bytes are kept in the objects tier, marked as
// posted (markPosted), and the decision creates the upload's record and
// claims it in one transaction. Bytes no decision records are deleted by
// the expiry pass (sweepPosted). The id of a file sent under an
// idempotency key is derived from the form, the key, the field, the
// file's place n and its SHA-256, so that the same post sent again names
// the same upload and is recognised as a retry. Errors are
// *problem.Problem for what the sender must fix (413, 422 file-rejected).
func (s *Service) Put(ctx context.Context, f *form.Form, field, name, key string, n int, src io.Reader) (journal.Upload, error) {
	fd, ok := f.Field(field)
	if !ok || fd.Type != form.TypeFile {
		return journal.Upload{}, problem.New(problem.CodeFileRejected, fmt.Sprintf("field %q is not a file field of this form", field))
	}
	tmp, err := os.CreateTemp(s.cfg.Dir, ".part-*")
	if err != nil {
		return journal.Upload{}, storageErr("store a posted file", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // the objects tier has its own link or copy
	}()
	h := sha256.New()
	head := &headBuffer{max: 512}
	size, err := io.Copy(io.MultiWriter(tmp, h, head), io.LimitReader(src, fd.MaxSizeOf()+1))
	if err != nil {
		return journal.Upload{}, storageErr("store a posted file", err)
	}
	if size > fd.MaxSizeOf() {
		return journal.Upload{}, problem.New(problem.CodePayloadTooLarge, fmt.Sprintf("field %s takes files of at most %s", field, form.Size(fd.MaxSizeOf())))
	}
	typ := sniff(head.Bytes())
	if !fd.Accepts(typ) {
		return journal.Upload{}, (&rejection{field: field, typ: typ}).problem()
	}
	if tp := checkPixels(fd, tmp, size, typ); tp != nil {
		return journal.Upload{}, tp.problem()
	}
	var sum [32]byte
	h.Sum(sum[:0])
	// Location metadata out, then the scan (safety.go): the digest is of
	// the bytes kept.
	if changed, err := s.clean(ctx, tmp, size, field, typ); err != nil {
		if inf, ok := refusedUpload(err); ok {
			return journal.Upload{}, inf.problem()
		}
		return journal.Upload{}, err
	} else if changed {
		if sum, err = digest(tmp, size); err != nil {
			return journal.Upload{}, err
		}
	}
	if err := tmp.Sync(); err != nil {
		return journal.Upload{}, storageErr("store a posted file", err)
	}
	id := newID()
	if key != "" {
		d := sha256.New()
		fmt.Fprintf(d, "formd/posted-file/v1\n%d:%s\n%d:%s\n%d:%s\n%d\n", len(f.ID()), f.ID(), len(key), key, len(field), field, n)
		d.Write(sum[:])
		id = hex.EncodeToString(d.Sum(nil)[:16])
	}
	now := s.cfg.Now().UTC()
	// Held to what a tus upload is, as far as intake can tell alone: an
	// open form, the disk's reserve. The budgets of unclaimed uploads
	// (budget.go) are the store's and do not apply: the decision claims
	// the file as it records it.
	if !f.OpenAt(now) {
		return journal.Upload{}, s.refuse("closed", problem.New(problem.CodeFormClosed, "the form is not open: it takes no files"))
	}
	if p := s.checkReserve(size); p != nil {
		return journal.Upload{}, p
	}
	// The mark first: bytes kept are always found by the sweep, whatever
	// happens to the post after.
	if err := s.markPosted(id, now); err != nil {
		return journal.Upload{}, err
	}
	if err := tmp.Close(); err != nil {
		return journal.Upload{}, storageErr("store a posted file", err)
	}
	if err := s.objs.Keep(ctx, id, tmp.Name(), size, sum); err != nil {
		return journal.Upload{}, err
	}
	return journal.Upload{ID: id, Field: field, Posted: &journal.Posted{
		Size: size, SHA256: hex.EncodeToString(sum[:]), Type: typ,
		Name: fileName(map[string]string{"filename": name}), Expires: now.Add(s.cfg.Expiry),
	}}, nil
}

// PostedDir is the directory, under the uploads directory, of the marks
// of posted files (Put) that no sweep has found recorded yet: one empty
// file per upload id, its time the post's. The directory tier owns the
// name, as its audit reads the marks.
const PostedDir = dirobjects.PostedDir

// markPosted writes, durably, the mark of posted upload id.
func (s *Service) markPosted(id string, now time.Time) error {
	dir := filepath.Join(s.cfg.Dir, PostedDir)
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return storageErr("mark a posted file", err)
	}
	p := filepath.Join(dir, id)
	m, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return storageErr("mark a posted file", err)
	}
	if err := m.Close(); err != nil {
		return storageErr("mark a posted file", err)
	}
	// A retry's mark was there: its time becomes this post's.
	if err := os.Chtimes(p, now, now); err != nil {
		return storageErr("mark a posted file", err)
	}
	return storageErr("mark a posted file", atomicfile.SyncDir(dir))
}

// sweepPosted goes through the marks of posted files. A file whose
// upload a decision recorded is the store's from then on (expiry, claims,
// erasure): its mark goes. A file no record names whose mark is older
// than the expiry before cutoff (expiryCutoff: never later than the
// oldest undecided entry's arrival, so no undecided entry names it) was
// kept for a post that was refused after its files were read, or was
// never journaled: its bytes go, then its mark. It returns how many such
// files it deleted.
func (s *Service) sweepPosted(ctx context.Context, cutoff time.Time) (int, error) {
	dir := filepath.Join(s.cfg.Dir, PostedDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep posted files: %w", err)
	}
	n := 0
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		id, mark := e.Name(), filepath.Join(dir, e.Name())
		_, err := s.st.Upload(ctx, id)
		switch {
		case err == nil:
		case errors.Is(err, store.ErrUploadNotFound):
			info, err := os.Stat(mark)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return n, fmt.Errorf("sweep posted files: %w", err)
			}
			if !info.ModTime().Add(s.cfg.Expiry).Before(cutoff) {
				continue
			}
			if err := s.removeBytes(ctx, id); err != nil {
				return n, fmt.Errorf("sweep posted file %s: %w", id, err)
			}
			n++
		default:
			return n, fmt.Errorf("sweep posted file %s: %w", id, err)
		}
		if err := os.Remove(mark); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("sweep posted files: %w", err)
		}
	}
	return n, nil
}

// headBuffer keeps the first max bytes written to it, for sniffing.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
