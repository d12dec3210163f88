package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Put stores one file of a plain HTML post (a multipart/form-data part)
// as a complete upload of the form's field, streaming it to disk (a
// temporary file, fsync'd, renamed) so that the body is never held in
// memory, and returns its id. The id of a file sent under an idempotency
// key is derived from the form, the key, the field, the file's place n
// and its SHA-256, so that the same post sent again names the same
// upload and is recognised as a retry. Errors are *problem.Problem for
// what the sender must fix (413, 422 file-rejected).
func (s *Service) Put(ctx context.Context, f *form.Form, field, name, key string, n int, src io.Reader) (string, error) {
	fd, ok := f.Field(field)
	if !ok || fd.Type != form.TypeFile {
		return "", problem.New(problem.CodeFileRejected, fmt.Sprintf("field %q is not a file field of this form", field))
	}
	tmp, err := os.CreateTemp(s.cfg.Dir, ".part-*")
	if err != nil {
		return "", storageErr("store a posted file", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // a no-op once renamed
	}()
	h := sha256.New()
	head := &headBuffer{max: 512}
	size, err := io.Copy(io.MultiWriter(tmp, h, head), io.LimitReader(src, fd.MaxSizeOf()+1))
	if err != nil {
		return "", storageErr("store a posted file", err)
	}
	if size > fd.MaxSizeOf() {
		return "", problem.New(problem.CodePayloadTooLarge, fmt.Sprintf("field %s takes files of at most %s", field, form.Size(fd.MaxSizeOf())))
	}
	typ := sniff(head.Bytes())
	if !fd.Accepts(typ) {
		return "", (&rejection{field: field, typ: typ}).problem()
	}
	if tp := checkPixels(fd, tmp, size, typ); tp != nil {
		return "", tp.problem()
	}
	var sum [32]byte
	h.Sum(sum[:0])
	// Location metadata out, then the scan (safety.go): the digest is of
	// the bytes kept.
	if changed, err := s.clean(ctx, tmp, size, field, typ); err != nil {
		if inf, ok := refusedUpload(err); ok {
			return "", inf.problem()
		}
		return "", err
	} else if changed {
		if sum, err = digest(tmp, size); err != nil {
			return "", err
		}
	}
	if err := tmp.Sync(); err != nil {
		return "", storageErr("store a posted file", err)
	}
	id := newID()
	if key != "" {
		d := sha256.New()
		fmt.Fprintf(d, "formd/posted-file/v1\n%d:%s\n%d:%s\n%d:%s\n%d\n", len(f.ID()), f.ID(), len(key), key, len(field), field, n)
		d.Write(sum[:])
		id = hex.EncodeToString(d.Sum(nil)[:16])
		// The same post sent again: its file is there already.
		if u, err := s.st.Upload(ctx, id); err == nil && u.Complete && u.SHA256 == sum {
			return id, nil
		} else if err != nil && !errors.Is(err, store.ErrUploadNotFound) {
			return "", err
		}
	}
	now := s.cfg.Now().UTC()
	// A retry's file is there already (above); a new one is held to what
	// a tus upload is: an open form, the disk's reserve, the form's
	// budgets (budget.go; the address is intake's, not known here).
	if !f.OpenAt(now) {
		return "", s.refuse("closed", problem.New(problem.CodeFormClosed, "the form is not open: it takes no files"))
	}
	if p := s.checkReserve(size); p != nil {
		return "", p
	}
	u := store.Upload{ID: id, Form: f.ID(), Field: field, Size: size, Name: fileName(map[string]string{"filename": name}),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.Expiry)}
	if err := s.create(ctx, u, now); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", storageErr("store a posted file", err)
	}
	// The bytes become the upload's object (renamed in place, or put to
	// the bucket); if they cannot, the record goes too, so that nothing
	// of the post is left.
	if err := s.objs.Keep(ctx, id, tmp.Name(), size, sum); err != nil {
		if _, derr := s.st.DeleteUpload(ctx, id); derr != nil {
			err = errors.Join(err, derr)
		}
		return "", err
	}
	if err := s.st.CompleteUpload(ctx, id, sum, typ); err != nil {
		return "", err
	}
	return id, nil
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
