package exif

import (
	"bytes"
	"encoding/binary"
	"io"
)

// Orientation is the Exif orientation (1–8) of a JPEG's first image,
// 1 when it has none: the cleaning keeps it so that a photo shows
// upright, and the thumbnail is turned by it too.
func Orientation(r io.ReaderAt, size int64) int {
	var hdr [4]byte
	for off := int64(2); off+4 <= size; {
		if _, err := r.ReadAt(hdr[:], off); err != nil || hdr[0] != 0xFF {
			return 1
		}
		if hdr[1] == 0xDA || hdr[1] == 0xD9 {
			return 1
		}
		n := int64(binary.BigEndian.Uint16(hdr[2:]))
		if n < 2 {
			return 1
		}
		if hdr[1] == 0xE1 && n > 2+8+6 && n <= maxExifPayload {
			p := make([]byte, n-2)
			if _, err := r.ReadAt(p, off+4); err == nil && bytes.HasPrefix(p, exifID) {
				return tiffOrientation(p[len(exifID)+1:])
			}
		}
		off += 2 + n
	}
	return 1
}

// tiffOrientation reads the Orientation tag of a TIFF structure's first
// IFD; 1 without one.
func tiffOrientation(t []byte) int {
	var bo binary.ByteOrder
	switch {
	case len(t) < 8:
		return 1
	case string(t[:4]) == "II*\x00":
		bo = binary.LittleEndian
	case string(t[:4]) == "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	ifd := int64(bo.Uint32(t[4:8]))
	if ifd < 8 || ifd+2 > int64(len(t)) {
		return 1
	}
	count := int64(bo.Uint16(t[ifd:]))
	for i := range count {
		e := ifd + 2 + 12*i
		if e+12 > int64(len(t)) {
			break
		}
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 {
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
		}
	}
	return 1
}
