package export

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/links"
)

// ZipFiles is what an export with its files reads besides the entries:
// each entry's uploads, and their bytes.
type ZipFiles struct {
	Uploads interface {
		EntryUploads(ctx context.Context, entryID string) ([]store.Upload, error)
	}
	// Open reads an upload's bytes.
	Open func(ctx context.Context, uploadID string) (io.ReadCloser, error)
	// Now is the time the zip's members are dated with.
	Now time.Time
}

// WriteZip writes the export with its files as a zip archive to w: the
// entries as entries.<format>, each file field's url the file's path in
// the archive, then every file under files/<entry id>/. Everything is
// streamed (archive/zip writes each member as it comes, with a data
// descriptor), so memory does not grow with the files' sizes or their
// number; the zip is read from the start, w need not seek.
func WriteZip(ctx context.Context, src Source, f *form.Form, format string, w io.Writer, opts Options, zf ZipFiles) error {
	zw := zip.NewWriter(w)
	rows := opts.Rows
	if rows == nil {
		rows = func(ctx context.Context, fn func(store.Row) error) error { return src.Export(ctx, f.ID(), fn) }
	}
	inZip := opts
	inZip.Rows = rows
	inZip.Files = func(ctx context.Context, entryID string) (map[string][]links.File, error) {
		ups, err := zf.Uploads.EntryUploads(ctx, entryID)
		if err != nil {
			return nil, err
		}
		out := map[string][]links.File{}
		for i, u := range ups {
			out[u.Field] = append(out[u.Field], links.File{Name: u.Name, Type: u.Type, Size: u.Size,
				SHA256: hex.EncodeToString(u.SHA256[:]), URL: zipPath(entryID, i, u.Name)})
		}
		return out, nil
	}
	ew, err := zw.CreateHeader(&zip.FileHeader{Name: "entries." + format, Method: zip.Deflate, Modified: zf.Now})
	if err != nil {
		return fmt.Errorf("export %s with files: %w", f.ID(), err)
	}
	if err := Write(ctx, src, f, format, ew, inZip); err != nil {
		return err
	}
	err = rows(ctx, func(r store.Row) error {
		if !bytes.Contains(r.Data, []byte(`"`+form.UploadsKey+`":`)) {
			return nil
		}
		ups, err := zf.Uploads.EntryUploads(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("entry %s: list its files: %w", r.ID, err)
		}
		for i, u := range ups {
			if err := zipFile(ctx, zw, zf, zipPath(r.ID, i, u.Name), u); err != nil {
				return fmt.Errorf("entry %s: %w", r.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("export %s with files: %w", f.ID(), err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("export %s with files: %w", f.ID(), err)
	}
	return nil
}

// zipFile copies one upload's bytes into the archive: stored as they are
// when already compressed (images, PDFs, archives), deflated otherwise.
func zipFile(ctx context.Context, zw *zip.Writer, zf ZipFiles, name string, u store.Upload) error {
	rc, err := zf.Open(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("file %s (upload %s): its bytes cannot be read (formd audit lists missing files): %w", u.Name, u.ID, err)
	}
	defer rc.Close()
	method := zip.Deflate
	if strings.HasPrefix(u.Type, "image/") || strings.HasPrefix(u.Type, "video/") || strings.HasPrefix(u.Type, "audio/") ||
		u.Type == "application/pdf" || u.Type == "application/zip" || u.Type == "application/x-gzip" {
		method = zip.Store
	}
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: u.CreatedAt})
	if err != nil {
		return err
	}
	n, err := io.Copy(fw, rc)
	if err != nil {
		return fmt.Errorf("file %s (upload %s): %w", u.Name, u.ID, err)
	}
	if n != u.Size {
		return fmt.Errorf("file %s (upload %s): %d bytes stored of its %d (formd audit)", u.Name, u.ID, n, u.Size)
	}
	return ctx.Err()
}

// zipPath is where an entry's i-th file goes in the archive:
// files/<entry>/<i+1>-<name>, the name made safe for any unzip (no
// folders, no control characters, no names Windows refuses).
func zipPath(entryID string, i int, name string) string {
	return "files/" + safeZipName(entryID) + "/" + strconv.Itoa(i+1) + "-" + safeZipName(name)
}

func safeZipName(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "_")
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`/\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, path.Base("/"+s))
	s = strings.Trim(s, ". ")
	if s == "" {
		s = "file"
	}
	if len(s) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
