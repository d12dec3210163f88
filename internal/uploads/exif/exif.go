// Package exif removes where a photo was taken from a JPEG or PNG, in
// place and keeping its length; the service calls it on every complete
// upload before the bytes are hashed, scanned and kept.
package exif

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Photos carry where they were taken: EXIF GPS tags, XMP and IPTC
// location fields, PNG text chunks. formd removes them from JPEG and PNG
// uploads before the bytes are hashed, scanned and kept, so that an
// owner, an export or a leaked link never gives away where a person
// lives. The stored SHA-256 is of these cleaned bytes.
//
// The cleaning is done in place and keeps the file's length, so that a
// resumable upload's offset and declared length stay true and a cleaning
// cut short by a crash is simply done again:
//
//   - JPEG: the APP1 Exif segment is rewritten to hold only the
//     orientation (so the photo still shows upright) and zeros; every
//     other Exif tag goes, GPS, maker notes, thumbnail, times and serial
//     numbers with it. APP1 XMP and APP13 (Photoshop IPTC) segments
//     become comment segments of zeros. Every image in the file is
//     cleaned so: a phone's JPEG often holds more than one (MPF's second
//     image, a depth or gain map, appended after the first), each with
//     its own Exif and XMP. An Exif identifier is "Exif\0" and any byte
//     (some cameras write "Exif\0\xff").
//   - PNG: an eXIf chunk is rewritten the same way; tEXt, zTXt and iTXt
//     chunks (where XMP and free-form location text live) become a
//     private ancillary chunk of zeros that decoders skip.
//
// The image data itself is not touched.

// scrubbedPNGChunk is the type a removed PNG chunk gets: ancillary,
// private, safe to copy, so every decoder skips it.
const scrubbedPNGChunk = "fdZz"

// maxExifPayload bounds how much of a PNG eXIf chunk is read to find the
// orientation; a larger one is dropped whole.
const maxExifPayload = 1 << 20

// RW is an upload's bytes, read and written in place.
type RW interface {
	io.ReaderAt
	io.WriterAt
}

// ScrubLocation removes location metadata from a JPEG or PNG of size
// bytes in place; other types are left alone. It says whether it changed
// anything.
func ScrubLocation(f RW, size int64, typ string) (bool, error) {
	switch typ {
	case "image/jpeg":
		return scrubJPEG(f, size)
	case "image/png":
		return scrubPNG(f, size)
	}
	return false, nil
}

var (
	// exifID starts an APP1 Exif payload; the byte after it (0 by the
	// standard, 0xff from some cameras) is padding, and the TIFF
	// structure follows it.
	exifID    = []byte("Exif\x00")
	xmpID     = []byte("http://ns.adobe.com/xap/1.0/\x00")
	xmpExtID  = []byte("http://ns.adobe.com/xmp/extension/\x00")
	errNotImg = errors.New("not a well-formed image")
)

// scrubJPEG cleans every image in a JPEG file: the first, then each
// start of image (FF D8 FF) found after the header of the one before —
// MPF's further images follow the first's end, and the bytes "FF D8"
// cannot occur in entropy-coded data (a 0xFF there is followed by 0 or
// a restart marker), so a search finds them without reading the MPF
// index, which could lie.
func scrubJPEG(f RW, size int64) (bool, error) {
	var soi [2]byte
	if _, err := f.ReadAt(soi[:], 0); err != nil || soi[0] != 0xFF || soi[1] != 0xD8 {
		return false, nil // sniffed as JPEG but not one: nothing to clean
	}
	changed := false
	for at := int64(0); at >= 0; {
		c, end, err := scrubJPEGHeader(f, size, at)
		changed = changed || c
		if err != nil {
			return changed, err
		}
		if at, err = nextSOI(f, max(end, at+2), size); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// nextSOI is the offset of the first FF D8 FF at or after from, -1 when
// there is none.
func nextSOI(f io.ReaderAt, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off := from; off+3 <= size; {
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return -1, fmt.Errorf("read JPEG: %w", err)
		}
		if i := bytes.Index(buf[:n], []byte{0xFF, 0xD8, 0xFF}); i >= 0 {
			return off + int64(i), nil
		}
		if off+n >= size {
			break
		}
		off += n - 2 // a marker across the boundary is found in the next read
	}
	return -1, nil
}

// scrubJPEGHeader walks the segments of the image starting (SOI) at at,
// up to its first scan (SOS), where metadata segments end; end is where
// the walk stopped.
func scrubJPEGHeader(f RW, size, at int64) (changed bool, end int64, err error) {
	var hdr [4]byte
	off := at + 2
	for off+4 <= size {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return changed, off, fmt.Errorf("read JPEG segment: %w", err)
		}
		if hdr[0] != 0xFF {
			return changed, off, nil // not a marker: stop, as decoders would fail anyway
		}
		marker := hdr[1]
		switch {
		case marker == 0xFF: // fill byte
			off++
			continue
		case marker == 0x01 || marker >= 0xD0 && marker <= 0xD7: // no length
			off += 2
			continue
		case marker == 0xDA || marker == 0xD9: // start of scan, end of image
			return changed, off, nil
		}
		n := int64(binary.BigEndian.Uint16(hdr[2:]))
		if n < 2 || off+2+n > size {
			return changed, off, nil
		}
		seg := off + 4 // payload
		plen := n - 2
		switch marker {
		case 0xE1: // APP1: Exif or XMP
			id := make([]byte, min(plen, int64(len(xmpExtID))))
			if _, err := f.ReadAt(id, seg); err != nil {
				return changed, off, fmt.Errorf("read JPEG segment: %w", err)
			}
			switch {
			case bytes.HasPrefix(id, exifID):
				// The TIFF structure starts after the identifier and its
				// padding byte.
				c, err := rewriteExif(f, seg+int64(len(exifID))+1, plen-int64(len(exifID))-1)
				if errors.Is(err, errNotImg) {
					c, err = blankSegment(f, off, plen)
				}
				if err != nil {
					return changed, off, err
				}
				changed = changed || c
			case bytes.HasPrefix(id, xmpID) || bytes.HasPrefix(id, xmpExtID):
				if _, err := blankSegment(f, off, plen); err != nil {
					return changed, off, err
				}
				changed = true
			}
		case 0xED: // APP13: Photoshop's IPTC, with its location fields
			if _, err := blankSegment(f, off, plen); err != nil {
				return changed, off, err
			}
			changed = true
		}
		off += 2 + n
	}
	return changed, off, nil
}

// blankSegment makes the JPEG segment at off a comment (COM) of zeros.
func blankSegment(f RW, off, plen int64) (bool, error) {
	if _, err := f.WriteAt([]byte{0xFF, 0xFE}, off); err != nil {
		return false, fmt.Errorf("clean JPEG metadata: %w", err)
	}
	if err := zero(f, off+4, plen); err != nil {
		return false, fmt.Errorf("clean JPEG metadata: %w", err)
	}
	return true, nil
}

// zero writes n zero bytes at off.
func zero(f io.WriterAt, off, n int64) error {
	z := make([]byte, min(n, 32<<10))
	for n > 0 {
		k := min(n, int64(len(z)))
		if _, err := f.WriteAt(z[:k], off); err != nil {
			return err
		}
		off, n = off+k, n-k
	}
	return nil
}

// rewriteExif replaces the TIFF structure of n bytes at off (an Exif
// payload after its "Exif\0\0") with one that holds only the
// orientation of its first IFD, then zeros. errNotImg when it cannot be
// read (the caller then drops it whole).
func rewriteExif(f RW, off, n int64) (bool, error) {
	if n < 8 || n > maxExifPayload {
		return false, errNotImg
	}
	old := make([]byte, n)
	if _, err := f.ReadAt(old, off); err != nil {
		return false, fmt.Errorf("read Exif: %w", err)
	}
	clean, err := exifWithOrientation(old)
	if err != nil {
		return false, err
	}
	if bytes.Equal(clean, old) {
		return false, nil
	}
	if _, err := f.WriteAt(clean, off); err != nil {
		return false, fmt.Errorf("clean Exif: %w", err)
	}
	return true, nil
}

// exifWithOrientation is a TIFF structure as long as old, in old's byte
// order, whose only IFD holds old's Orientation tag (if it had one).
func exifWithOrientation(old []byte) ([]byte, error) {
	var bo binary.ByteOrder
	switch string(old[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return nil, errNotImg
	}
	var orientation uint16
	ifd := int64(bo.Uint32(old[4:8]))
	if ifd+2 <= int64(len(old)) && ifd >= 8 {
		count := int64(bo.Uint16(old[ifd:]))
		for i := int64(0); i < count; i++ {
			e := ifd + 2 + 12*i
			if e+12 > int64(len(old)) {
				break
			}
			// Orientation: tag 0x0112, SHORT, one value, held in the entry.
			if bo.Uint16(old[e:]) == 0x0112 && bo.Uint16(old[e+2:]) == 3 && bo.Uint32(old[e+4:]) == 1 {
				if v := bo.Uint16(old[e+8:]); v >= 1 && v <= 8 {
					orientation = v
				}
			}
		}
	}
	clean := make([]byte, len(old))
	copy(clean, old[:4])
	bo.PutUint32(clean[4:], 8)
	need := 8 + 2 + 4
	if orientation != 0 {
		need += 12
	}
	if len(clean) < need {
		return nil, errNotImg
	}
	if orientation != 0 {
		bo.PutUint16(clean[8:], 1)
		bo.PutUint16(clean[10:], 0x0112)
		bo.PutUint16(clean[12:], 3)
		bo.PutUint32(clean[14:], 1)
		bo.PutUint16(clean[18:], orientation)
		// clean[22:26], the next IFD's offset, is 0: there is none.
	}
	return clean, nil
}

// scrubPNG walks the chunks up to IEND.
func scrubPNG(f RW, size int64) (bool, error) {
	var sig [8]byte
	if _, err := f.ReadAt(sig[:], 0); err != nil || string(sig[:]) != "\x89PNG\r\n\x1a\n" {
		return false, nil
	}
	changed := false
	var hdr [8]byte
	for off := int64(8); off+12 <= size; {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return changed, fmt.Errorf("read PNG chunk: %w", err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:8])
		if n > 0x7fffffff || off+12+n > size {
			return changed, nil
		}
		data := off + 8
		switch typ {
		case "IEND":
			return changed, nil
		case "eXIf":
			c, err := rewriteExif(f, data, n)
			if errors.Is(err, errNotImg) {
				err = dropChunk(f, off, n)
				c = true
			}
			if err != nil {
				return changed, err
			}
			if c {
				if err := fixCRC(f, off, n); err != nil {
					return changed, err
				}
				changed = true
			}
		case "tEXt", "zTXt", "iTXt":
			if err := dropChunk(f, off, n); err != nil {
				return changed, err
			}
			changed = true
		}
		off += 12 + n
	}
	return changed, nil
}

// dropChunk makes the PNG chunk at off a scrubbed chunk of zeros, with
// its CRC.
func dropChunk(f RW, off, n int64) error {
	if _, err := f.WriteAt([]byte(scrubbedPNGChunk), off+4); err != nil {
		return fmt.Errorf("clean PNG metadata: %w", err)
	}
	if err := zero(f, off+8, n); err != nil {
		return fmt.Errorf("clean PNG metadata: %w", err)
	}
	return fixCRC(f, off, n)
}

// fixCRC writes the CRC of the chunk at off (type and n data bytes).
func fixCRC(f RW, off, n int64) error {
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(f, off+4, 4+n)); err != nil {
		return fmt.Errorf("clean PNG metadata: %w", err)
	}
	var crc [4]byte
	binary.BigEndian.PutUint32(crc[:], h.Sum32())
	if _, err := f.WriteAt(crc[:], off+8+n); err != nil {
		return fmt.Errorf("clean PNG metadata: %w", err)
	}
	return nil
}
