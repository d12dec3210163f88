package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/links"
)

// FileLister lists an entry's files by field, each with a signed link
// (links.Signer.Files).
type FileLister func(ctx context.Context, entryID string) (map[string][]links.File, error)

// withFiles streams rows with their file fields' values made the files'
// {name, type, size, sha256, url} (a list for a field of more than one
// file), when files is set, and the internal list of upload ids
// (form.UploadsKey) left out in any case.
func withFiles(f *form.Form, rows func(context.Context, func(store.Row) error) error, files FileLister) func(context.Context, func(store.Row) error) error {
	return func(ctx context.Context, fn func(store.Row) error) error {
		return rows(ctx, func(r store.Row) error {
			if !bytes.Contains(r.Data, []byte(`"`+form.UploadsKey+`":`)) {
				return fn(r)
			}
			var byField map[string][]links.File
			if files != nil {
				var err error
				if byField, err = files(ctx, r.ID); err != nil {
					return fmt.Errorf("entry %s: list its files: %w", r.ID, err)
				}
			}
			data, err := rewriteFiles(f, r.Data, byField)
			if err != nil {
				return fmt.Errorf("entry %s: %w", r.ID, err)
			}
			r.Data = data
			return fn(r)
		})
	}
}

// FileData is an entry's data as exports give it: each file field's
// value the files' {name, type, size, sha256, url} (from files, when
// set), the internal list of upload ids left out. Data naming no upload
// is returned as is.
func FileData(ctx context.Context, f *form.Form, entryID string, data json.RawMessage, files FileLister) (json.RawMessage, error) {
	if f == nil || !bytes.Contains(data, []byte(`"`+form.UploadsKey+`":`)) {
		return data, nil
	}
	var byField map[string][]links.File
	if files != nil {
		var err error
		if byField, err = files(ctx, entryID); err != nil {
			return nil, fmt.Errorf("entry %s: list its files: %w", entryID, err)
		}
	}
	return rewriteFiles(f, data, byField)
}

// rewriteFiles rewrites one entry's data, keeping its members' order.
func rewriteFiles(f *form.Form, data json.RawMessage, byField map[string][]links.File) (json.RawMessage, error) {
	out, _, err := rewriteObject(data, func(k string, v json.RawMessage) (json.RawMessage, bool, error) {
		if k == form.UploadsKey {
			return nil, false, nil
		}
		fd, ok := f.Field(k)
		if !ok || fd.Type != form.TypeFile || byField == nil {
			return v, true, nil
		}
		var files any = byField[k]
		if fd.MaxFilesOf() == 1 && len(byField[k]) == 1 {
			files = byField[k][0]
		}
		// Links keep their & (an encoder escapes it for HTML otherwise),
		// so that a CSV cell shows a link one can open.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(files); err != nil {
			return nil, false, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true, nil
	})
	return out, err
}
