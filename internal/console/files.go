package console

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/uploads"
)

// entryFile is one file on the entry page: a download through a
// short-lived signed link, and for a photo a thumbnail of it.
type entryFile struct {
	Field, Name, Type, Size, URL string
	// Thumb is the link of a thumbnail the server makes of a photo, at
	// most uploads.ThumbSize on a side (never the original: it may be
	// 50 megapixels); "" for files it makes none of.
	Thumb string
	field string // the field's name
}

// entryFiles lists an entry's files, by the order of the form's fields,
// with links relative to this server (the console's own origin, which
// its Content-Security-Policy allows for images).
func (h *Handler) entryFiles(ctx context.Context, f *form.Form, e admin.EntryView, tag string) ([]entryFile, error) {
	if h.adm.Files == nil || len(e.Data) == 0 || !strings.Contains(string(e.Data), `"`+form.UploadsKey+`":`) {
		return nil, nil
	}
	byField, err := h.adm.Files(ctx, e.ID)
	if err != nil {
		return nil, fmt.Errorf("list the entry's files: %w", err)
	}
	var out []entryFile
	for _, fd := range f.Fields() {
		if fd.Type != form.TypeFile {
			continue
		}
		label := fd.Label.For(tag)
		if label == "" {
			label = fd.Name
		}
		for _, file := range byField[fd.Name] {
			name := file.Name
			if name == "" {
				name = fd.Name
			}
			out = append(out, entryFile{Field: label, Name: name, Type: file.Type, Size: form.Size(file.Size).Shown(),
				URL: localURL(file.URL), Thumb: uploads.ThumbURL(localURL(file.URL), file.Type), field: fd.Name})
		}
	}
	return out, nil
}

// withFileNames shows each file field in the entry's data by its files'
// names rather than the upload:<id> it holds; fields are the form's
// fields first, in order.
func withFileNames(f *form.Form, fields []fieldValue, files []entryFile) {
	for i, fd := range f.Fields() {
		if fd.Type != form.TypeFile || i >= len(fields) {
			continue
		}
		var names []string
		for _, file := range files {
			if file.field == fd.Name {
				names = append(names, file.Name)
			}
		}
		if len(names) > 0 {
			fields[i].Value = strings.Join(names, ", ")
		}
	}
}

// localURL is a signed link as a path on this server.
func localURL(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	return u.RequestURI()
}

// The entry page's words about files (uploads), kept apart from the
// string tables in strings.go.
func init() {
	for k, v := range map[string]string{
		"files.title": "Files", "files.download": "Download %s", "files.thumb": "Photo %s, sent for %s",
		"files.links": "The links work for a few minutes (--link-ttl); reload the page for new ones.",
	} {
		enStrings[k] = v
	}
	for k, v := range map[string]string{
		"files.title": "文件", "files.download": "下载 %s", "files.thumb": "照片 %s（%s）",
		"files.links": "下载链接只在几分钟内有效；过期后重新加载本页即可。",
	} {
		zhStrings[k] = v
	}
}
