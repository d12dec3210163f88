package intake

import (
	"context"
	"fmt"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// Uploads checks the uploads a submission names (uploads.Service).
type Uploads interface {
	Check(ctx context.Context, f *form.Form, refs []form.UploadRef) ([]form.FieldError, error)
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
	}
	return &form.ValidationError{Errors: errs}
}
