package uploads

import (
	"context"
	"errors"
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
	dir   string
	sums  *sums
}

var (
	_ handler.DataStore           = durableStore{}
	_ handler.TerminaterDataStore = durableStore{}
)

func newDurableStore(dir string) durableStore {
	fs := filestore.New(dir)
	fs.DirModePerm, fs.FileModePerm = 0o700, 0o600
	return durableStore{files: fs, dir: dir, sums: &sums{m: map[string]*runningSum{}}}
}

// UseIn makes the store the composer's core and terminater; no
// concatenation, deferred length or download through tus.
func (d durableStore) UseIn(c *handler.StoreComposer) {
	c.UseCore(d)
	c.UseTerminater(d)
}

func (d durableStore) NewUpload(ctx context.Context, info handler.FileInfo) (handler.Upload, error) {
	du, err := d.newUpload(ctx, info)
	if err != nil {
		// A disk too full for the new files: none is left behind, and
		// the answer is 507 (the upload's record, which no client can
		// claim without bytes, expires).
		if info.ID != "" {
			os.Remove(filepath.Join(d.dir, info.ID))
			os.Remove(filepath.Join(d.dir, info.ID+".info"))
		}
		return nil, tusStorageErr("create upload", err)
	}
	return du, nil
}

func (d durableStore) newUpload(ctx context.Context, info handler.FileInfo) (*durableUpload, error) {
	up, err := d.files.NewUpload(ctx, info)
	if err != nil {
		return nil, err
	}
	du, err := d.wrap(ctx, up)
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
	return d.wrap(ctx, up)
}

func (d durableStore) AsTerminatableUpload(up handler.Upload) handler.TerminatableUpload {
	return up.(*durableUpload)
}

func (d durableStore) wrap(ctx context.Context, up handler.Upload) (*durableUpload, error) {
	info, err := up.GetInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &durableUpload{Upload: up, id: info.ID, sums: d.sums,
		bin: info.Storage[filestore.StorageKeyPath], info: info.Storage[filestore.StorageKeyInfoPath]}, nil
}

// durableUpload is one upload of durableStore.
type durableUpload struct {
	handler.Upload
	id        string
	bin, info string
	sums      *sums
}

// WriteChunk appends and fsyncs, hashing the bytes as they arrive (see
// sums). What was written before an error (a dropped connection) is
// fsync'd too, so the client resumes after it; a chunk the disk had no
// room for is cut off again, so that the upload stands where it stood
// before the request, and the answer is 507.
func (u *durableUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	rs, err := u.sums.resume(u.id, u.bin, offset)
	if err != nil {
		return 0, err
	}
	counted := &countingReader{r: io.TeeReader(src, rs)}
	n, err := u.Upload.WriteChunk(ctx, offset, counted)
	if err != nil && isFull(err) {
		if terr := os.Truncate(u.bin, offset); terr != nil {
			err = errors.Join(err, terr)
		} else if serr := syncPath(u.bin); serr != nil {
			err = errors.Join(err, serr)
		}
		return 0, tusStorageErr("write upload", err)
	}
	if n > 0 {
		if serr := syncPath(u.bin); serr != nil && err == nil {
			err = tusStorageErr("write upload", serr)
		}
	}
	// The running digest goes on from here only when it saw exactly the
	// bytes written; otherwise the next chunk hashes the file again.
	if counted.n == n {
		u.sums.keep(u.id, rs)
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
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
	u.sums.drop(u.id)
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
