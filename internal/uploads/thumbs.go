package uploads

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"net/http"
	"strconv"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/uploads/exif"
)

// Thumbnails of an entry's photos are made here, at most ThumbSize on a
// side, rather than the browser being handed the original (which may be
// 50 megapixels): GET on a file's signed link with thumb=1. One is made
// at a time, so that the memory decoding takes is that of one image of
// at most form.DefaultMaxPixels (about 200 MB for an RGBA PNG), whatever
// the number of console pages open; an image above that gets no
// thumbnail (404), only its download.
const ThumbSize = 320

// thumbSlots is the one decoding at a time.
var thumbSlots = make(chan struct{}, 1)

// thumbTypes are the types Go's standard library decodes.
func thumbType(typ string) bool {
	return typ == "image/jpeg" || typ == "image/png" || typ == "image/gif"
}

// ThumbURL is the thumbnail's link of a file's signed link, or "" when
// formd makes none for the type.
func ThumbURL(link, typ string) string {
	if !thumbType(typ) {
		return ""
	}
	return link + "&thumb=1"
}

// serveThumb answers a thumbnail request for an upload of type typ whose
// bytes are f.
func (s *Service) serveThumb(w http.ResponseWriter, r *http.Request, typ string, f io.ReadSeeker, size int64) {
	ra, ok := f.(io.ReaderAt)
	if !thumbType(typ) || !ok {
		writeProblem(w, r, problem.New(problem.CodeNotFound, "no thumbnail is made of this file: download it"), 0)
		return
	}
	wd, ht, ok := imageSize(ra, size, typ)
	if !ok || wd*ht > form.DefaultMaxPixels || wd <= 0 || ht <= 0 {
		writeProblem(w, r, problem.New(problem.CodeNotFound, "no thumbnail is made of an image this large: download it"), 0)
		return
	}
	select {
	case thumbSlots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	o := 1
	if typ == "image/jpeg" {
		o = exif.Orientation(ra, size)
	}
	b, err := thumbnail(io.NewSectionReader(ra, 0, size), o)
	<-thumbSlots
	if err != nil {
		writeProblem(w, r, problem.New(problem.CodeNotFound, "this image could not be read for a thumbnail: download it"), 0)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/jpeg")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Del("Content-Disposition")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b) //nolint:errcheck // the client may be gone
	}
}

// thumbnail decodes an image and encodes it again as a JPEG of at most
// ThumbSize on a side, each pixel the mean of the block it stands for,
// turned as the Exif orientation o says (the thumbnail has no Exif).
func thumbnail(r io.Reader, o int) ([]byte, error) {
	src, _, err := image.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("decode for a thumbnail: %w", err)
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	tw, th := w, h
	if w > ThumbSize || h > ThumbSize {
		if w >= h {
			tw, th = ThumbSize, max(1, h*ThumbSize/w)
		} else {
			tw, th = max(1, w*ThumbSize/h), ThumbSize
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	for y := range th {
		y0, y1 := b.Min.Y+y*h/th, b.Min.Y+max((y+1)*h/th, y*h/th+1)
		for x := range tw {
			x0, x1 := b.Min.X+x*w/tw, b.Min.X+max((x+1)*w/tw, x*w/tw+1)
			// At most 4 × 4 samples of the block: a mean good enough
			// for a thumbnail, at a bounded cost per pixel.
			var rs, gs, bs, n uint64
			for sy := y0; sy < y1; sy += max(1, (y1-y0)/4) {
				for sx := x0; sx < x1; sx += max(1, (x1-x0)/4) {
					cr, cg, cb, _ := src.At(sx, sy).RGBA()
					rs, gs, bs, n = rs+uint64(cr), gs+uint64(cg), bs+uint64(cb), n+1
				}
			}
			i := dst.PixOffset(x, y)
			dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2], dst.Pix[i+3] = uint8(rs/n>>8), uint8(gs/n>>8), uint8(bs/n>>8), 0xff
		}
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, orient(dst, o), &jpeg.Options{Quality: 80}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// orient turns an image as its Exif orientation says.
func orient(src *image.RGBA, o int) *image.RGBA {
	if o <= 1 || o > 8 {
		return src
	}
	w, h := src.Bounds().Dx(), src.Bounds().Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dst := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		for x := range dw {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = w-1-x, y
			case 3:
				sx, sy = w-1-x, h-1-y
			case 4:
				sx, sy = x, h-1-y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, h-1-x
			case 7:
				sx, sy = w-1-y, h-1-x
			case 8:
				sx, sy = w-1-y, x
			}
			copy(dst.Pix[dst.PixOffset(x, y):][:4], src.Pix[src.PixOffset(sx, sy):][:4])
		}
	}
	return dst
}
