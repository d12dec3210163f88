package intake

import (
	"context"
	"io"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// Uploads stores the files of plain HTML posts (uploads.Service); the
// uploads a submission names are checked by its decision.
type Uploads interface {
	Put(ctx context.Context, f *form.Form, field, name, key string, n int, r io.Reader) (string, error)
}

// postedFiles takes the file parts of a plain HTML post to a form with
// file fields: each is streamed to the upload store as a complete upload
// and the field's value becomes its upload:<id>, as if the SDK had
// uploaded it first.
type postedFiles struct {
	ctx context.Context
	f   *form.Form
	up  Uploads
}

func (p postedFiles) allowance() int64 {
	var n int64
	for _, fd := range p.f.Fields() {
		if fd.Type == form.TypeFile {
			n += fd.MaxSizeOf() * int64(fd.MaxFilesOf())
		}
	}
	return n
}

func (p postedFiles) put(field, filename, key string, n int, r io.Reader) (string, error) {
	return p.up.Put(p.ctx, p.f, field, filename, key, n, r)
}

// filesFor is the sink for a post's file parts, nil when the form has no
// file field or the server takes no uploads.
func (h *Handler) filesFor(ctx context.Context, f *form.Form) fileSink {
	if h.cfg.Uploads == nil {
		return nil
	}
	for _, fd := range f.Fields() {
		if fd.Type == form.TypeFile {
			return postedFiles{ctx: ctx, f: f, up: h.cfg.Uploads}
		}
	}
	return nil
}

// uploadChecks are a new submission's upload references as its entry
// carries them (journal.Entry.Uploads), for the decision that checks and
// claims them in the store's transaction: each must be a complete upload
// of its form and field, not expired when the entry was received, that no
// entry has claimed (DESIGN invariant 12: intake calls no store before
// the journal). The references' shape was checked by validation. Without
// an upload service no reference is valid, which intake knows alone.
func (h *Handler) uploadChecks(refs []form.UploadRef) ([]journal.Upload, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if h.cfg.Uploads == nil {
		errs := make([]form.FieldError, len(refs))
		for i, ref := range refs {
			errs[i] = form.FieldError{Field: ref.Field, Code: problem.CodeUploadNotFound, Message: "this server takes no uploads"}
		}
		return nil, &form.ValidationError{Errors: errs}
	}
	out := make([]journal.Upload, len(refs))
	for i, ref := range refs {
		out[i] = journal.Upload{ID: ref.ID, Field: ref.Field}
	}
	return out, nil
}
