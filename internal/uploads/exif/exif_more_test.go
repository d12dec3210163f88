package exif

import (
	"bytes"
	"encoding/binary"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// memFile is bytes read and written in place, for the scrubber.
type memFile []byte

func (m memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(m)) {
		return 0, os.ErrInvalid
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, errShort
	}
	return n, nil
}

func (m memFile) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m)) {
		return 0, os.ErrInvalid // the scrubber never writes past the end
	}
	return copy(m[off:], p), nil
}

var errShort = os.ErrClosed

// segment is a JPEG marker segment.
func segment(marker byte, payload []byte) []byte {
	b := []byte{0xFF, marker, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(len(payload)+2))
	return append(b, payload...)
}

// withSegments is the JPEG j with segs inserted after its SOI.
func withSegments(j []byte, segs ...[]byte) []byte {
	out := append([]byte{}, j[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, j[2:]...)
}

func gpsPhoto(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gps-photo.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// phoneLayouts are JPEGs laid out as phones write them, from the test
// photo (which carries GPS in Exif, XMP and IPTC): an iPhone's HEIC
// exported as JPEG and a Pixel's Ultra HDR photo hold a second image
// (MPF: a gain map or depth map) after the first's end, with its own
// Exif and XMP; some cameras write "Exif\0\xff"; Samsung appends a
// trailer after the end of image.
func phoneLayouts(t *testing.T) map[string][]byte {
	t.Helper()
	photo := gpsPhoto(t)
	mpf := segment(0xE2, append([]byte("MPF\x00MM\x00*\x00\x00\x00\x08"), make([]byte, 40)...))
	primary := withSegments(photo, mpf)
	variant := bytes.Replace(photo, []byte("Exif\x00\x00"), []byte("Exif\x00\xff"), 1)
	if bytes.Equal(variant, photo) {
		t.Fatal("the test photo has no Exif identifier")
	}
	return map[string][]byte{
		"MPF second image (Ultra HDR, iPhone)": append(append([]byte{}, primary...), photo...),
		"three images":                         append(append(append([]byte{}, primary...), photo...), photo...),
		"Exif\\0\\xff identifier":              variant,
		"Exif\\0\\xff in the second image":     append(append([]byte{}, photo...), variant...),
		"trailer after the end (Samsung)":      append(append([]byte{}, photo...), []byte("SEFH\x00\x00\x00\x00 31.2304 121.4737 SEFT")...),
	}
}

// TestScrubEveryImage is issue 30's leak: GPS, camera make, XMP and IPTC
// survived in the second image of a JPEG, and behind an "Exif\0\xff"
// identifier. Every image is cleaned, the length kept, the first image
// still decodes to the same pixels, and a second cleaning changes
// nothing.
func TestScrubEveryImage(t *testing.T) {
	for name, orig := range phoneLayouts(t) {
		t.Run(name, func(t *testing.T) {
			b := memFile(bytes.Clone(orig))
			changed, err := ScrubLocation(b, int64(len(b)), "image/jpeg")
			if err != nil || !changed {
				t.Fatalf("scrub: changed %v, %v", changed, err)
			}
			if len(b) != len(orig) {
				t.Fatal("the length changed")
			}
			for _, s := range []string{"Shanghai", "ns.adobe.com", "TestCam"} {
				if n := bytes.Count(b, []byte(s)); n > 0 {
					t.Errorf("%q is still in the cleaned file %d times", s, n)
				}
			}
			if name != "trailer after the end (Samsung)" {
				for _, s := range []string{"31.2304", "121.4737"} {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%q is still in the cleaned file", s)
					}
				}
			}
			a, err := jpeg.Decode(bytes.NewReader(orig))
			if err != nil {
				t.Fatal(err)
			}
			c, err := jpeg.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("the cleaned photo does not decode: %v", err)
			}
			if !samePixels(a, c) {
				t.Error("the cleaned photo's pixels differ")
			}
			again, err := ScrubLocation(b, int64(len(b)), "image/jpeg")
			if err != nil || again {
				t.Fatalf("second scrub: changed %v, %v", again, err)
			}
		})
	}
}

// FuzzScrubLocation: on any bytes, as a JPEG or a PNG, the scrubber does
// not panic, keeps the length (it writes in place, and never past the
// end: memFile refuses), and is idempotent — a cleaning cut short by a
// crash is done again from the start, and must then change nothing more.
func FuzzScrubLocation(f *testing.F) {
	png, _ := os.ReadFile(filepath.Join("testdata", "gps-photo.png"))
	f.Add(png, false)
	jpg, _ := os.ReadFile(filepath.Join("testdata", "gps-photo.jpg"))
	f.Add(jpg, true)
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x10, 'E', 'x', 'i', 'f', 0, 0xff, 'I', 'I', '*', 0, 8, 0, 0, 0}, true)
	f.Add([]byte{0xFF, 0xD8, 0xFF, 0xD9, 0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x02}, true)
	f.Add([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x04eXIfMM\x00*\x00\x00\x00\x00"), false)
	f.Fuzz(func(t *testing.T, b []byte, asJPEG bool) {
		typ := "image/png"
		if asJPEG {
			typ = "image/jpeg"
		}
		m := memFile(bytes.Clone(b))
		if _, err := ScrubLocation(m, int64(len(m)), typ); err != nil {
			return // a read the file could not give: nothing promised
		}
		if len(m) != len(b) {
			t.Fatalf("length %d, was %d", len(m), len(b))
		}
		once := bytes.Clone(m)
		changed, err := ScrubLocation(m, int64(len(m)), typ)
		if err != nil {
			t.Fatalf("second scrub: %v", err)
		}
		if changed || !bytes.Equal(m, once) {
			t.Fatalf("a second scrub changed the bytes (reported %v)", changed)
		}
	})
}
