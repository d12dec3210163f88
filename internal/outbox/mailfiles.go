package outbox

import (
	"bytes"
	"context"
	"fmt"

	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
)

// ownerFiles lists an entry's files for the owner's mail, each with a
// signed link, and shows each file field by its files' names rather than
// the internal upload:<id> (fields is fieldValues's list, in the form's
// field order).
func (d *Dispatcher) ownerFiles(ctx context.Context, f *form.Form, doc store.EntryDoc, fields []email.FieldValue) ([]email.FileLink, error) {
	if d.opts.Files == nil || !bytes.Contains(doc.Data, []byte(`"`+form.UploadsKey+`":`)) {
		return nil, nil
	}
	byField, err := d.opts.Files(ctx, doc.ID)
	if err != nil {
		return nil, fmt.Errorf("list the entry's files: %w", err)
	}
	var out []email.FileLink
	for i, fd := range f.Fields() {
		if fd.Type != form.TypeFile || i >= len(fields) {
			continue
		}
		var names []string
		for _, file := range byField[fd.Name] {
			out = append(out, email.FileLink{Field: fields[i].Label, Name: file.Name, Type: file.Type, Size: file.Size, URL: file.URL, Until: file.Expires})
			names = append(names, file.Name)
		}
		fields[i].Value = names
	}
	return out, nil
}
