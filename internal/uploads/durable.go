package uploads

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tus/tusd/v2/pkg/filestore"
	"github.com/tus/tusd/v2/pkg/handler"
)

// durableStore is tusd's filestore with every write fsync'd before it is
// answered: tusd's own returns after write(2), so an offset a HEAD
// reported could be lost with the machine. The offset a later HEAD gives
// is the bytes file's size, so a byte counted is a byte on disk.
type durableStore struct {
	files filestore.FileStore
}

var (
	_ handler.DataStore           = durableStore{}
	_ handler.TerminaterDataStore = durableStore{}
)

func newDurableStore(dir string) durableStore {
	fs := filestore.New(dir)
	fs.DirModePerm, fs.FileModePerm = 0o700, 0o600
	return durableStore{files: fs}
}

// UseIn makes the store the composer's core and terminater; no
// concatenation, deferred length or download through tus.
func (d durableStore) UseIn(c *handler.StoreComposer) {
	c.UseCore(d)
	c.UseTerminater(d)
}

func (d durableStore) NewUpload(ctx context.Context, info handler.FileInfo) (handler.Upload, error) {
	up, err := d.files.NewUpload(ctx, info)
	if err != nil {
		return nil, err
	}
	du, err := wrap(ctx, up)
	if err != nil {
		return nil, err
	}
	// The new files and their names in the directory are durable before
	// the creation is answered.
	for _, p := range []string{du.bin, du.info} {
		if err := syncPath(p); err != nil {
			return nil, err
		}
	}
	if err := syncPath(filepath.Dir(du.bin)); err != nil {
		return nil, err
	}
	return du, nil
}

func (d durableStore) GetUpload(ctx context.Context, id string) (handler.Upload, error) {
	up, err := d.files.GetUpload(ctx, id)
	if err != nil {
		return nil, err
	}
	return wrap(ctx, up)
}

func (d durableStore) AsTerminatableUpload(up handler.Upload) handler.TerminatableUpload {
	return up.(*durableUpload)
}

func wrap(ctx context.Context, up handler.Upload) (*durableUpload, error) {
	info, err := up.GetInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &durableUpload{Upload: up, bin: info.Storage[filestore.StorageKeyPath], info: info.Storage[filestore.StorageKeyInfoPath]}, nil
}

// durableUpload is one upload of durableStore.
type durableUpload struct {
	handler.Upload
	bin, info string
}

// WriteChunk appends and fsyncs. What was written before an error (a
// dropped connection) is fsync'd too, so the client resumes after it.
func (u *durableUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	n, err := u.Upload.WriteChunk(ctx, offset, src)
	if n > 0 {
		if serr := syncPath(u.bin); serr != nil && err == nil {
			err = serr
		}
	}
	return n, err
}

func (u *durableUpload) FinishUpload(ctx context.Context) error {
	if err := syncPath(u.bin); err != nil {
		return err
	}
	return u.Upload.FinishUpload(ctx)
}

func (u *durableUpload) Terminate(ctx context.Context) error {
	t, ok := u.Upload.(handler.TerminatableUpload)
	if !ok {
		return fmt.Errorf("terminate upload: the file store cannot")
	}
	return t.Terminate(ctx)
}

// syncPath fsyncs a file or a directory.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
	}
	return f.Close()
}
