package intake

import (
	"context"
	"fmt"
	"io"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// Uploads checks the uploads a submission names, and stores the files
// of plain HTML posts (uploads.Service).
type Uploads interface {
	Check(ctx context.Context, f *form.Form, refs []form.UploadRef) ([]form.FieldError, error)
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

// checkUploads is the validation of a new submission's upload
// references: each a complete upload of its form and field that no entry
// has claimed. An upload another entry claimed is 422
// upload-already-used; anything else is validation-failed with a code per
// field. The decision claims the uploads (package store), so two
// submissions naming one upload at once still give it to one entry.
func (h *Handler) checkUploads(ctx context.Context, f *form.Form, refs []form.UploadRef) error {
	var errs []form.FieldError
	if h.cfg.Uploads == nil {
		for _, ref := range refs {
			errs = append(errs, form.FieldError{Field: ref.Field, Code: "upload-not-found", Message: "this server takes no uploads"})
		}
	} else {
		var err error
		if errs, err = h.cfg.Uploads.Check(ctx, f, refs); err != nil {
			return fmt.Errorf("check uploads: %w", err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	for _, fe := range errs {
		if fe.Code == problem.CodeUploadUsed {
			p := problem.New(problem.CodeUploadUsed, fmt.Sprintf("field %s names a file another submission has", fe.Field))
			p.Errors = errs
			return p
		}
		if fe.Code == problem.CodeFileInfected {
			p := problem.New(problem.CodeFileInfected, fe.Message)
			p.Errors = errs
			return p
		}
	}
	return &form.ValidationError{Errors: errs}
}
