// Command qrvideo writes a ticket's QR code as a short Y4M video, for
// Chromium's fake camera (--use-file-for-fake-video-capture) in the door
// page's browser test (e2e/console/door.test.js). The QR code is the one
// the participant's page shows (internal/ticket), centred on a white
// 640×480 frame.
//
//	go run ./e2e/console/qrvideo TICKET OUT.y4m
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"

	"github.com/formd/formd/internal/ticket"
)

const width, height, frames = 640, 480, 10

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: qrvideo TICKET OUT.y4m")
		os.Exit(2)
	}
	if err := write(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "qrvideo:", err)
		os.Exit(1)
	}
}

func write(text, out string) error {
	b, err := ticket.PNG(text, 5)
	if err != nil {
		return fmt.Errorf("the ticket's QR code: %w", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("decode the QR code's PNG: %w", err)
	}
	g, ok := img.(*image.Gray)
	if !ok {
		return fmt.Errorf("the QR code's PNG is %T, not grey", img)
	}
	qw, qh := g.Rect.Dx(), g.Rect.Dy()
	if qw > width || qh > height {
		return fmt.Errorf("the QR code (%d×%d) does not fit a %d×%d frame", qw, qh, width, height)
	}
	// Luma: white, with the QR code in the middle; chroma: neutral.
	y := bytes.Repeat([]byte{0xeb}, width*height)
	ox, oy := (width-qw)/2, (height-qh)/2
	for r := range qh {
		for c := range qw {
			if g.GrayAt(c, r).Y < 0x80 {
				y[(oy+r)*width+ox+c] = 0x10
			}
		}
	}
	uv := bytes.Repeat([]byte{0x80}, width*height/4)
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create the video: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "YUV4MPEG2 W%d H%d F10:1 Ip A1:1 C420jpeg\n", width, height)
	for range frames {
		w.WriteString("FRAME\n")
		w.Write(y)
		w.Write(uv)
		w.Write(uv)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write the video: %w", err)
	}
	return f.Close()
}
