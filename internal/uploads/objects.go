package uploads

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// Objects is where the bytes of complete uploads live, one object per
// upload id: a content-addressed directory under --data (dirobjects, the
// embedded tier), or an S3-compatible bucket that every instance of a
// deployment shares (s3objects, --uploads s3://…). The bytes of an
// upload still being sent are its parts: tusd's files in --data/uploads
// on the embedded tier (fsync'd at every chunk), parts in the bucket
// with --uploads s3 (s3objects.Parts). Once every byte is there,
// Keep makes them the upload's object and the parts go.
type Objects interface {
	// Keep makes the complete file at path (size bytes, of that SHA-256)
	// the object id, durable when it returns. The file at path may be
	// gone after; a second Keep of the same id and bytes is no error.
	Keep(ctx context.Context, id, path string, size int64, sum [32]byte) error
	// Open reads an object; errNoObject when there is none.
	Open(ctx context.Context, id string) (Object, error)
	// Delete removes an object; no error when there is none.
	Delete(ctx context.Context, id string) error
}

// Object is one object being read. It is an alias, not a type of its
// own, so that the objects' conformance suite (objectstest) can name the
// Objects interface without importing this package.
type Object = io.ReadSeekCloser

// Both tiers are Objects (objectstest runs the same suite on each).
var (
	_ Objects = (*dirobjects.Dir)(nil)
	_ Objects = (*s3objects.Bucket)(nil)
)

// openDirMigrated opens the embedded tier's objects under dir and moves
// in the uploads earlier releases completed (Migrate), before the
// service answers anything.
func openDirMigrated(st Store, dir string, log *slog.Logger) (*dirobjects.Dir, error) {
	d, err := dirobjects.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	n, err := d.Migrate(context.Background(), func(ctx context.Context, id string) ([32]byte, bool, error) {
		u, err := st.Upload(ctx, id)
		if errors.Is(err, store.ErrUploadNotFound) {
			return [32]byte{}, false, nil
		}
		return u.SHA256, err == nil && u.Complete, err
	})
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Info("moved uploads completed by an earlier release into the content-addressed directory", "uploads", n, "dir", filepath.Join(dir, dirobjects.ObjectsDir))
	}
	return d, nil
}
