package intake

import (
	"context"
	"io"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
)

// Uploads keeps the files of plain HTML posts (uploads.Service) without
// a store call: the decision records and claims them (journal.Posted);
// the uploads a submission names are checked by its decision.
type Uploads interface {
	Put(ctx context.Context, f *form.Form, field, name, key string, n int, r io.Reader) (journal.Upload, error)
}

// postedFiles takes the file parts of a plain HTML post to a form with
// file fields: each is streamed to the objects tier and the field's value
// becomes its upload:<id>, as if the SDK had uploaded it first; kept
// remembers what the decision records each by.
type postedFiles struct {
	ctx  context.Context
	f    *form.Form
	up   Uploads
	kept map[string]*journal.Posted
}

func (p *postedFiles) allowance() int64 {
	var n int64
	for _, fd := range p.f.Fields() {
		if fd.Type == form.TypeFile {
			n += fd.MaxSizeOf() * int64(fd.MaxFilesOf())
		}
	}
	return n
}

func (p *postedFiles) put(field, filename, key string, n int, r io.Reader) (string, error) {
	u, err := p.up.Put(p.ctx, p.f, field, filename, key, n, r)
	if err != nil {
		return "", err
	}
	if p.kept == nil {
		p.kept = map[string]*journal.Posted{}
	}
	p.kept[u.ID] = u.Posted
	return u.ID, nil
}

// filesFor is the sink for a post's file parts, nil when the form has no
// file field or the server takes no uploads.
func (h *Handler) filesFor(ctx context.Context, f *form.Form) *postedFiles {
	if h.cfg.Uploads == nil {
		return nil
	}
	for _, fd := range f.Fields() {
		if fd.Type == form.TypeFile {
			return &postedFiles{ctx: ctx, f: f, up: h.cfg.Uploads}
		}
	}
	return nil
}

// posted is what the decision records a posted file by; nil for an
// upload the post did not carry (sent over tus first).
func (p *postedFiles) posted(id string) *journal.Posted {
	if p == nil {
		return nil
	}
	return p.kept[id]
}

// uploadChecks are a new submission's upload references as its entry
// carries them (journal.Entry.Uploads), for the decision that checks and
// claims them in the store's transaction: each must be a complete upload
// of its form and field, not expired when the entry was received, that no
// entry has claimed (DESIGN invariant 12: intake calls no store before
// the journal). The references' shape was checked by validation. Without
// an upload service no reference is valid, which intake knows alone.
func (h *Handler) uploadChecks(refs []form.UploadRef, files *postedFiles) ([]journal.Upload, error) {
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
		out[i] = journal.Upload{ID: ref.ID, Field: ref.Field, Posted: files.posted(ref.ID)}
	}
	return out, nil
}
