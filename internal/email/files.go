package email

import (
	"time"

	"github.com/formd/formd/internal/form"
)

// FileLink is one file of an entry as the owner's mail lists it: its
// name, type and size, and a signed link to download it that works until
// Until (--link-ttl); after that the console gives a new one.
type FileLink struct {
	// Field is the file field's label in the mail's language.
	Field, Name, Type string
	Size              int64
	URL               string
	Until             time.Time
}

// fileRow is a FileLink made ready for the templates.
type fileRow struct {
	Field, Name, Type, Size, URL string
}

// fileRows lists the files, and says until when their links work (the
// earliest, when they differ).
func fileRows(fs []FileLink, loc *time.Location, l lang) ([]fileRow, string) {
	if len(fs) == 0 {
		return nil, ""
	}
	rows := make([]fileRow, len(fs))
	until := fs[0].Until
	for i, f := range fs {
		name := f.Name
		if name == "" {
			name = "—"
		}
		rows[i] = fileRow{Field: f.Field, Name: oneLine(name), Type: f.Type, Size: form.Size(f.Size).Shown(), URL: f.URL}
		if f.Until.Before(until) {
			until = f.Until
		}
	}
	return rows, l.when(until, loc)
}
