package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/formd/formd/internal/atomicfile"
)

// A snapshot is the state at one journal position, so that a restart
// reads it and then only the journal's records after that position. It
// is written atomically (temporary file, fsync, rename) and checked with
// a CRC when read: a damaged snapshot is refused, and the state is then
// rebuilt from the journal alone.

const snapshotMagic = "formd-inmem-snapshot/1\n"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// writeSnapshot writes the state (no append may be in flight) to path.
func writeSnapshot(s *state, path string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pendKeys) > 0 {
		return 0, errors.New("write snapshot: appends are in flight")
	}
	var size int64
	err := atomicfile.Write(path, 0o600, func(w io.Writer) error {
		crc := crc32.New(castagnoli)
		bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
		var hdr [32]byte
		binary.LittleEndian.PutUint64(hdr[0:], s.last)
		binary.LittleEndian.PutUint64(hdr[8:], uint64(s.taken))
		binary.LittleEndian.PutUint64(hdr[16:], uint64(len(s.keys)))
		binary.LittleEndian.PutUint64(hdr[24:], uint64(len(s.claims)))
		bw.WriteString(snapshotMagic)
		bw.Write(hdr[:])
		for k := range s.keys {
			bw.Write(k[:])
		}
		var rec [32]byte
		for c, h := range s.claims {
			copy(rec[:16], c[:])
			binary.LittleEndian.PutUint64(rec[16:], h.seq)
			binary.LittleEndian.PutUint64(rec[24:], h.fp)
			bw.Write(rec[:])
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
		_, err := w.Write(sum[:])
		size = int64(len(snapshotMagic)+len(hdr)) + 16*int64(len(s.keys)) + 32*int64(len(s.claims)) + 4
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write snapshot %s: %w", path, err)
	}
	return size, nil
}

// readSnapshot reads a snapshot into a new state.
func readSnapshot(path string, capacity int64) (*state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	bad := func(why string) error { return fmt.Errorf("read snapshot %s: %s", path, why) }
	if len(b) < len(snapshotMagic)+32+4 || !bytes.HasPrefix(b, []byte(snapshotMagic)) {
		return nil, bad("not a snapshot")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, bad("its checksum does not match: damaged")
	}
	p := body[len(snapshotMagic):]
	last, taken := binary.LittleEndian.Uint64(p[0:]), int64(binary.LittleEndian.Uint64(p[8:]))
	nk, nc := binary.LittleEndian.Uint64(p[16:]), binary.LittleEndian.Uint64(p[24:])
	p = p[32:]
	if uint64(len(p)) != 16*nk+32*nc {
		return nil, bad("its length does not match its counts")
	}
	s := newState(capacity, int(nk))
	s.last, s.taken = last, taken
	for i := uint64(0); i < nk; i++ {
		var k [16]byte
		copy(k[:], p[16*i:])
		s.keys[k] = struct{}{}
	}
	p = p[16*nk:]
	for i := uint64(0); i < nc; i++ {
		r := p[32*i:]
		var c [16]byte
		copy(c[:], r[:16])
		s.claims[c] = claimRec{seq: binary.LittleEndian.Uint64(r[16:]), fp: binary.LittleEndian.Uint64(r[24:])}
	}
	return s, nil
}
