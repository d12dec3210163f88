package exif

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	imagepng "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test photos were made with image/jpeg and image/png and given
// coordinates (31.2304 N, 121.4737 E: EXIF GPS, XMP, IPTC City, a PNG
// text chunk) and Orientation 6 with Debian's exiftool:
//
//	exiftool -GPSLatitude=31.2304 -GPSLatitudeRef=N -GPSLongitude=121.4737 \
//	  -GPSLongitudeRef=E -GPSAltitude=12 -Orientation=6 -n -Make=TestCam \
//	  -XMP:GPSLatitude=31.2304 -XMP:GPSLongitude=121.4737 -IPTC:City=Shanghai gps-photo.jpg
//	exiftool … -PNG:Comment="taken at home, 31.2304N 121.4737E" gps-photo.png
func TestScrubLocation(t *testing.T) {
	for _, tc := range []struct {
		file, typ string
		decode    func([]byte) (image.Image, error)
	}{
		{"gps-photo.jpg", "image/jpeg", func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }},
		{"gps-photo.png", "image/png", func(b []byte) (image.Image, error) { return imagepng.Decode(bytes.NewReader(b)) }},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if exifHasGPS(t, orig) == false {
				t.Fatal("the test photo carries no GPS to remove")
			}
			p := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(p, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			changed, err := ScrubLocation(f, int64(len(orig)), tc.typ)
			f.Close()
			if err != nil || !changed {
				t.Fatalf("scrub: changed %v, %v", changed, err)
			}
			clean, _ := os.ReadFile(p)
			if len(clean) != len(orig) {
				t.Fatalf("%d bytes after, %d before: the length must stay", len(clean), len(orig))
			}
			for _, s := range []string{"Shanghai", "31.2304", "121.4737", "ns.adobe.com", "TestCam", "GPS"} {
				if bytes.Contains(clean, []byte(s)) {
					t.Errorf("%q is still in the cleaned file", s)
				}
			}
			if exifHasGPS(t, clean) {
				t.Error("the Exif still points at a GPS IFD")
			}
			if o := exifOrientation(t, clean); o != 6 {
				t.Errorf("orientation %d after cleaning, want 6 (kept)", o)
			}
			a, err := tc.decode(orig)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tc.decode(clean)
			if err != nil {
				t.Fatalf("the cleaned photo does not decode: %v", err)
			}
			if !samePixels(a, b) {
				t.Error("the cleaned photo's pixels differ")
			}
			// Cleaning again changes nothing (a cleaning cut short is
			// done again from the start).
			f, _ = os.OpenFile(p, os.O_RDWR, 0)
			again, err := ScrubLocation(f, int64(len(clean)), tc.typ)
			f.Close()
			if err != nil || again {
				t.Fatalf("second scrub: changed %v, %v", again, err)
			}
			// exiftool, where installed, agrees (CI installs it).
			if _, err := exec.LookPath("exiftool"); err == nil {
				out, err := exec.Command("exiftool", "-a", "-G1", "-n", p).CombinedOutput()
				if err != nil {
					t.Fatalf("exiftool: %v\n%s", err, out)
				}
				for _, line := range strings.Split(string(out), "\n") {
					if strings.Contains(line, "GPS") || strings.Contains(line, "City") || strings.Contains(line, "Warning") {
						t.Errorf("exiftool still reads: %s", line)
					}
				}
				if !strings.Contains(string(out), "Orientation                     : 6") {
					t.Errorf("exiftool reads no orientation 6:\n%s", out)
				}
			}
		})
	}
	t.Run("other types untouched", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "x.pdf")
		os.WriteFile(p, []byte("%PDF-1.4 GPS 31.2304"), 0o600)
		f, _ := os.OpenFile(p, os.O_RDWR, 0)
		defer f.Close()
		if changed, err := ScrubLocation(f, 20, "application/pdf"); err != nil || changed {
			t.Fatalf("a PDF: %v %v", changed, err)
		}
	})
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

// exifTIFF finds the TIFF structure of a JPEG's Exif segment or a PNG's
// eXIf chunk, for the checks (independently of scrubJPEG's walk: a plain
// search for the markers is enough on the test photos).
func exifTIFF(t *testing.T, b []byte) ([]byte, binary.ByteOrder) {
	t.Helper()
	var tiff []byte
	if i := bytes.Index(b, []byte("eXIf")); i >= 4 && bytes.HasPrefix(b, []byte("\x89PNG")) {
		n := binary.BigEndian.Uint32(b[i-4:])
		tiff = b[i+4 : i+4+int(n)]
	} else if i := bytes.Index(b, []byte("Exif\x00\x00")); i >= 0 {
		n := binary.BigEndian.Uint16(b[i-2:])
		tiff = b[i+6 : i-2+int(n)]
	} else {
		return nil, nil
	}
	switch string(tiff[:2]) {
	case "II":
		return tiff, binary.LittleEndian
	case "MM":
		return tiff, binary.BigEndian
	}
	t.Fatalf("no TIFF header in the Exif: % x", tiff[:8])
	return nil, nil
}

// ifd0 lists the first IFD's tags and their first SHORT value.
func ifd0(t *testing.T, b []byte) map[uint16]uint16 {
	tiff, bo := exifTIFF(t, b)
	tags := map[uint16]uint16{}
	if tiff == nil {
		return tags
	}
	off := bo.Uint32(tiff[4:])
	n := bo.Uint16(tiff[off:])
	for i := range uint32(n) {
		e := tiff[off+2+12*i:]
		tags[bo.Uint16(e)] = bo.Uint16(e[8:])
	}
	return tags
}

func exifHasGPS(t *testing.T, b []byte) bool {
	_, ok := ifd0(t, b)[0x8825]
	return ok
}

func exifOrientation(t *testing.T, b []byte) uint16 { return ifd0(t, b)[0x0112] }
