package uploads

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/formd/formd/internal/uploads/tier"
	"github.com/tus/tusd/v2/pkg/handler"
)

// sniffLen is how many of a file's first bytes its type is sniffed from
// (net/http's DetectContentType reads at most 512).
const sniffLen = 512

// runningSum is the SHA-256 of an upload's first offset bytes, and its
// first bytes for sniffing, kept while the upload is being received so
// that completing it does not read the file again.
type runningSum struct {
	h      hash.Hash
	offset int64
	head   []byte
}

func (r *runningSum) Write(p []byte) (int, error) {
	r.h.Write(p)
	if room := sniffLen - len(r.head); room > 0 {
		r.head = append(r.head, p[:min(room, len(p))]...)
	}
	r.offset += int64(len(p))
	return len(p), nil
}

// sums are the running digests of the uploads this instance is
// receiving, by id. A digest lives in memory only: after a restart, or a
// chunk that failed part way, the first chunk that resumes the upload
// hashes the bytes already on disk once (resume), and the rest as they
// come. The map holds a few hundred bytes per upload being sent and
// loses an entry when the upload completes, is terminated or deleted.
type sums struct {
	mu sync.Mutex
	m  map[string]*runningSum
}

// resume is the digest to go on with at offset: the one kept if it
// stands there, else one made by reading the file's first offset bytes.
// The digest is taken out of the map while the chunk is written; keep
// puts it back.
func (s *sums) resume(id, path string, offset int64) (*runningSum, error) {
	s.mu.Lock()
	rs := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	if rs != nil && rs.offset == offset {
		return rs, nil
	}
	return hashPrefix(path, offset)
}

func (s *sums) keep(id string, rs *runningSum) {
	s.mu.Lock()
	s.m[id] = rs
	s.mu.Unlock()
}

func (s *sums) drop(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// take removes and returns the digest of id when it covers size bytes.
func (s *sums) take(id string, size int64) *runningSum {
	s.mu.Lock()
	rs := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	if rs == nil || rs.offset != size {
		return nil
	}
	return rs
}

// hashPrefix hashes the first n bytes of the file at path.
func hashPrefix(path string, n int64) (*runningSum, error) {
	rs := &runningSum{h: sha256.New()}
	if n == 0 {
		return rs, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hash upload: %w", err)
	}
	defer f.Close()
	got, err := io.Copy(rs, io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("hash upload: %w", err)
	}
	if got != n {
		return nil, fmt.Errorf("hash upload: the file has %d of the %d bytes its offset says", got, n)
	}
	return rs, nil
}

// isFull says err is a disk without room.
func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrStorageFull)
}

// tusStorageErr is err as the error a tusd store returns: a full disk
// the 507 problem, anything else the error itself (tusd answers 500,
// which the rewriter makes a problem document).
func tusStorageErr(op string, err error) error {
	if isFull(err) {
		return tier.TusError(storageErr(op, err))
	}
	var he handler.Error
	if errors.As(err, &he) {
		return he
	}
	return fmt.Errorf("%s: %w", op, err)
}
