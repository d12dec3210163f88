package uploads

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/formd/formd/internal/uploads/exif"
)

// clean makes a complete upload's bytes fit to keep, before they are
// hashed and the upload can be claimed: location metadata is removed
// from photos (exif.go), then the bytes are scanned (scan.go, with
// --clamd). f holds the size bytes, open for reading and writing (a
// local file: a byte store elsewhere cleans its local copy first). It
// says whether the bytes changed, so that their digest is taken after.
// An infection is *infection; a scan that could not happen is a
// CodeScanUnavailable problem, and the upload stays incomplete, never
// claimable, until a later try passes.
func (s *Service) clean(ctx context.Context, f syncedRW, size int64, field, typ string) (bool, error) {
	changed, err := exif.ScrubLocation(f, size, typ)
	if err != nil {
		return changed, err
	}
	if changed {
		if err := f.Sync(); err != nil {
			return changed, fmt.Errorf("sync cleaned upload: %w", err)
		}
	}
	return changed, s.scan(ctx, field, io.NewSectionReader(f, 0, size))
}

// syncedRW is bytes read and written in place, then made durable.
type syncedRW interface {
	exif.RW
	Sync() error
}

// digest is the SHA-256 of f's size bytes.
func digest(f io.ReaderAt, size int64) ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	n, err := io.Copy(h, io.NewSectionReader(f, 0, size))
	if err != nil {
		return sum, fmt.Errorf("hash upload: %w", err)
	}
	if n != size {
		return sum, fmt.Errorf("hash upload: %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
	}
	h.Sum(sum[:0])
	return sum, nil
}

// refusedUpload is the problem a cleaning refused an upload with
// (an infection), or nil.
func refusedUpload(err error) (*infection, bool) {
	var inf *infection
	ok := errors.As(err, &inf)
	return inf, ok
}
