package uploads

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/uploads/exif"
)

// pngHeader is a PNG that says it is w × h: its header, no pixels.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	chunk := func(typ string, data []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		b = append(b, typ...)
		b = append(b, data...)
		return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	b := []byte("\x89PNG\r\n\x1a\n")
	b = append(b, chunk("IHDR", ihdr)...)
	b = append(b, chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})...)
	return append(b, chunk("IEND", nil)...)
}

// jpegSaying is a small real JPEG whose frame header says w × h.
func jpegSaying(t *testing.T, w, h uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, 16, 16)), nil); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	i := bytes.Index(b, []byte{0xFF, 0xC0})
	if i < 0 {
		t.Fatal("no SOF0")
	}
	binary.BigEndian.PutUint16(b[i+5:], h)
	binary.BigEndian.PutUint16(b[i+7:], w)
	return b
}

// TestImageBombsRefused is issue 30's bombs: a 20000 × 20000 PNG and a
// 65500 × 65500 JPEG of a few hundred bytes are refused (422
// file-rejected, the upload deleted), their size read from the header;
// a photo within the limit is taken, and a field's max_pixels lowers the
// limit.
func TestImageBombsRefused(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, photoForm+`---
id: small
fields: [{name: photo, type: file, max_size: 64KiB, max_pixels: 10000}]
`, nil)
	for name, tc := range map[string]struct {
		form string
		body []byte
		ok   bool
	}{
		"PNG 20000 × 20000":   {"exam", pngHeader(20000, 20000), false},
		"JPEG 65500 × 65500":  {"exam", jpegSaying(t, 65500, 65500), false},
		"PNG 4000 × 3000":     {"exam", pngHeader(4000, 3000), true},
		"JPEG 8000 × 6000":    {"exam", jpegSaying(t, 8000, 6000), true},
		"PNG 101 × 100 small": {"small", pngHeader(101, 100), false},
		"PNG 100 × 100 small": {"small", pngHeader(100, 100), true},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.createFrom(tc.form, "192.0.2.1", len(tc.body))
			if res.StatusCode != 201 {
				t.Fatalf("create: %d", res.StatusCode)
			}
			res = r.patch(res.Header.Get("Location"), 0, tc.body, false)
			if tc.ok {
				if res.StatusCode != 204 {
					t.Fatalf("an image within the limit: %d %s", res.StatusCode, problemCode(t, res))
				}
				return
			}
			if res.StatusCode != 422 {
				t.Fatalf("a bomb: %d", res.StatusCode)
			}
			if got := problemCode(t, res); !strings.HasPrefix(got, "file-rejected: ") || !strings.Contains(got, "pixels") {
				t.Fatalf("a bomb: %s", got)
			}
		})
	}
	for typ, tc := range map[string]struct {
		b    []byte
		w, h int64
	}{
		"image/webp": {append([]byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00"), 0x1f, 0x4e, 0x00, 0x1f, 0x4e, 0x00), 20000, 20000},
		"image/bmp":  {append(append([]byte("BM"), make([]byte, 16)...), 0x20, 0x4e, 0, 0, 0xe0, 0xb1, 0xff, 0xff), 20000, 20000},
	} {
		if w, h, ok := imageSize(bytes.NewReader(tc.b), int64(len(tc.b)), typ); !ok || w != tc.w || h != tc.h {
			t.Errorf("%s: %d × %d %v, want %d × %d", typ, w, h, ok, tc.w, tc.h)
		}
	}
}

// A plain HTML post's file is held to the same limit.
func TestPostedImageBombRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, err := r.svc.Put(context.Background(), r.forms["exam"], "photo", "bomb.png", "key-1", 0, bytes.NewReader(pngHeader(20000, 20000)))
	if p := problem.From(err); err == nil || p.Code != problem.CodeFileRejected || !strings.Contains(p.Detail, "pixels") {
		t.Fatalf("a posted bomb: %v", err)
	}
}

// A thumbnail is at most ThumbSize on a side, keeps the aspect, and is a
// JPEG made here whatever the original.
func TestThumbnailBounded(t *testing.T) {
	t.Parallel()
	for _, sz := range []image.Point{{2000, 1000}, {300, 1200}, {5, 5}} {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, image.NewGray(image.Rect(0, 0, sz.X, sz.Y)), nil); err != nil {
			t.Fatal(err)
		}
		b, err := thumbnail(bytes.NewReader(buf.Bytes()), 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		w, h := sz.X, sz.Y
		if w > ThumbSize || h > ThumbSize {
			if w >= h {
				w, h = ThumbSize, sz.Y*ThumbSize/sz.X
			} else {
				w, h = sz.X*ThumbSize/sz.Y, ThumbSize
			}
		}
		if c.Width != w || c.Height != h {
			t.Errorf("thumbnail of %v is %d × %d, want %d × %d", sz, c.Width, c.Height, w, h)
		}
	}
}

// The test photo (96 × 64, Orientation 6) gets an upright thumbnail,
// 64 × 96, as the browser would show the photo itself; each orientation
// turns a known pixel where it belongs.
func TestThumbnailUpright(t *testing.T) {
	t.Parallel()
	photo, err := os.ReadFile(filepath.Join("exif", "testdata", "gps-photo.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if o := exif.Orientation(bytes.NewReader(photo), int64(len(photo))); o != 6 {
		t.Fatalf("orientation %d, want 6", o)
	}
	b, err := thumbnail(bytes.NewReader(photo), 6)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := jpeg.DecodeConfig(bytes.NewReader(b)); err != nil || c.Width != 64 || c.Height != 96 {
		t.Fatalf("thumbnail %+v %v, want 64 × 96", c, err)
	}
	src := image.NewRGBA(image.Rect(0, 0, 3, 2))
	src.Pix[src.PixOffset(0, 0)] = 255 // top-left marked
	for o, want := range map[int]image.Point{1: {0, 0}, 2: {2, 0}, 3: {2, 1}, 4: {0, 1}, 5: {0, 0}, 6: {1, 0}, 7: {1, 2}, 8: {0, 2}} {
		d := orient(src, o)
		if d.Pix[d.PixOffset(want.X, want.Y)] != 255 {
			t.Errorf("orientation %d: the top-left pixel is not at %v", o, want)
		}
	}
}

// A file's name is kept without the bidi controls that make
// "evil\u202egpj.exe" show as "evilexe.jpg" (issue 30); package links tests
// the names shown and sent.
func TestKeptFileNameLosesBidiControls(t *testing.T) {
	t.Parallel()
	if got := fileName(map[string]string{"filename": "evil\u202egpj.exe"}); got != "evilgpj.exe" {
		t.Fatalf("kept name %q", got)
	}
}
