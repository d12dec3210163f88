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
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// zipExport is formd export --with-files: the export and the files'
// bytes (under --data/uploads, or in the --uploads bucket) in one zip,
// streamed.
func zipExport(ctx context.Context, cfg config.Config, st server.Store, f *form.Form, format string, opts export.Options) func(io.Writer) error {
	open := func(_ context.Context, id string) (io.ReadCloser, error) {
		return dirobjects.DirBytes(filepath.Join(cfg.Data, "uploads")).Open(id)
	}
	return func(w io.Writer) error {
		if loc := cfg.UploadsS3; loc != nil {
			objs, err := s3objects.New(ctx, *loc)
			if err != nil {
				return err
			}
			open = func(ctx context.Context, id string) (io.ReadCloser, error) { return objs.Open(ctx, id) }
		}
		return export.WriteZip(ctx, st, f, format, w, opts, export.ZipFiles{Uploads: st, Open: open, Now: time.Now()})
	}
}
