package uploads

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	_ "image/gif"  // DecodeConfig reads GIF headers
	_ "image/jpeg" // and JPEG's
	_ "image/png"  // and PNG's
	"io"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// An image's width and height are read from its header, without decoding
// its pixels, and an image of more pixels than its field's max_pixels
// (form.DefaultMaxPixels unless set) is refused: a 20000 × 20000 PNG or a
// 65500 × 65500 JPEG of a few kilobytes would take gigabytes to decode
// in whatever shows it.

// headerLimit bounds how much of a file is read to find its dimensions:
// a JPEG's frame header comes after its metadata segments, each at most
// 64 KiB.
const headerLimit = 4 << 20

// imageSize reads the dimensions of an image of a type sniff gives from
// its header; ok is false for other types or a header that cannot be
// read.
func imageSize(r io.ReaderAt, size int64, typ string) (w, h int64, ok bool) {
	sr := io.NewSectionReader(r, 0, min(size, headerLimit))
	switch typ {
	case "image/png", "image/jpeg", "image/gif":
		c, _, err := image.DecodeConfig(sr)
		if err != nil {
			return 0, 0, false
		}
		return int64(c.Width), int64(c.Height), true
	case "image/webp":
		return webpSize(sr)
	case "image/bmp":
		var hdr [26]byte
		if _, err := io.ReadFull(sr, hdr[:]); err != nil {
			return 0, 0, false
		}
		w := int64(int32(binary.LittleEndian.Uint32(hdr[18:])))
		h := int64(int32(binary.LittleEndian.Uint32(hdr[22:])))
		return abs(w), abs(h), true
	}
	return 0, 0, false
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// webpSize reads a WebP's canvas (VP8X), or its one frame's size (VP8L,
// VP8).
func webpSize(r io.Reader) (w, h int64, ok bool) {
	var b [30]byte
	if _, err := io.ReadFull(r, b[:]); err != nil || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	u24 := func(p []byte) int64 { return int64(p[0]) | int64(p[1])<<8 | int64(p[2])<<16 }
	switch string(b[12:16]) {
	case "VP8X":
		return u24(b[24:]) + 1, u24(b[27:]) + 1, true
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, false
		}
		v := binary.LittleEndian.Uint32(b[21:])
		return int64(v&0x3fff) + 1, int64(v>>14&0x3fff) + 1, true
	case "VP8 ":
		if !bytes.Equal(b[23:26], []byte{0x9d, 0x01, 0x2a}) {
			return 0, 0, false
		}
		return int64(binary.LittleEndian.Uint16(b[26:]) & 0x3fff), int64(binary.LittleEndian.Uint16(b[28:]) & 0x3fff), true
	}
	return 0, 0, false
}

// tooManyPixels is an image larger than its field takes.
type tooManyPixels struct {
	field      string
	w, h, most int64
}

func (e *tooManyPixels) Error() string {
	return fmt.Sprintf("image of %d × %d pixels is over field %s's max_pixels %d", e.w, e.h, e.field, e.most)
}

func (e *tooManyPixels) problem() *problem.Problem {
	return problem.New(problem.CodeFileRejected, fmt.Sprintf("field %s takes images of at most %d pixels (width × height); this one is %d × %d", e.field, e.most, e.w, e.h))
}

// checkPixels refuses an image of more pixels than the field takes.
func checkPixels(fd form.Field, r io.ReaderAt, size int64, typ string) *tooManyPixels {
	w, h, ok := imageSize(r, size, typ)
	if !ok {
		return nil
	}
	if most := fd.MaxPixelsOf(); w*h > most {
		return &tooManyPixels{field: fd.Name, w: w, h: h, most: most}
	}
	return nil
}
