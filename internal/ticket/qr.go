package ticket

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// quiet is the margin around a QR code, in modules: the four the
// standard asks for, so that a phone's camera finds the code on any page.
const quiet = 4

// modules is a QR code's matrix of dark (true) and light modules, encoded
// by github.com/yeqown/go-qrcode (error correction M, its default).
type modules [][]bool

func encode(text string) (modules, error) {
	q, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("encode a QR code: %w", err)
	}
	var m matrixWriter
	if err := q.Save(&m); err != nil {
		return nil, fmt.Errorf("encode a QR code: %w", err)
	}
	return m.dark, nil
}

// matrixWriter takes the library's matrix as it is saved (its Writer);
// the image is drawn here, without the library's image writers, which are
// modules of their own with more dependencies.
type matrixWriter struct{ dark modules }

func (w *matrixWriter) Write(mat qrcode.Matrix) error {
	w.dark = make(modules, mat.Height())
	for y := range w.dark {
		w.dark[y] = make([]bool, mat.Width())
	}
	mat.Iterate(qrcode.IterDirection_ROW, func(x, y int, v qrcode.QRValue) {
		w.dark[y][x] = v.IsSet()
	})
	return nil
}

func (w *matrixWriter) Close() error { return nil }

// PNG is the QR code of text as a PNG image, scale pixels a module, with
// its quiet zone: black on white, as scanners expect.
func PNG(text string, scale int) ([]byte, error) {
	m, err := encode(text)
	if err != nil {
		return nil, err
	}
	n := len(m) + 2*quiet
	img := image.NewGray(image.Rect(0, 0, n*scale, n*scale))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for y, row := range m {
		for x, dark := range row {
			if !dark {
				continue
			}
			for dy := range scale {
				for dx := range scale {
					img.SetGray((x+quiet)*scale+dx, (y+quiet)*scale+dy, color.Gray{})
				}
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, fmt.Errorf("encode a QR code's PNG: %w", err)
	}
	return b.Bytes(), nil
}

// SVG is the QR code of text as an SVG image (one path, one unit a
// module, quiet zone included) for a page to scale as it likes; label is
// its accessible name.
func SVG(text, label string) ([]byte, error) {
	m, err := encode(text)
	if err != nil {
		return nil, err
	}
	n := len(m) + 2*quiet
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s" shape-rendering="crispEdges">`, n, n, html.EscapeString(label))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range m {
		for x, dark := range row {
			if dark {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+quiet, y+quiet)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return b.Bytes(), nil
}
