package main

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/uploads"
)

// zipExport is formd export --with-files: the export and the files'
// bytes (under --data/uploads) in one zip, streamed.
func zipExport(ctx context.Context, cfg config.Config, st server.Store, f *form.Form, format string, opts export.Options) func(io.Writer) error {
	files := uploads.DirBytes(filepath.Join(cfg.Data, "uploads"))
	return func(w io.Writer) error {
		return export.WriteZip(ctx, st, f, format, w, opts, export.ZipFiles{
			Uploads: st, Open: func(_ context.Context, id string) (io.ReadCloser, error) { return files.Open(id) }, Now: time.Now(),
		})
	}
}
