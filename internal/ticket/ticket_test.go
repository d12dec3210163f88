package ticket_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/ticket"
)

const id = "0193a3c2-7a4e-7000-8000-000000000001"

func TestTicketRoundTripAndForgeries(t *testing.T) {
	t.Parallel()
	h := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	other := form.NewHasher([]byte("another installation's secret!!!"))
	tk := ticket.Ticket(h, "fair", id)
	if f, got, ok := ticket.Parse(h, tk); !ok || f != "fair" || got != id {
		t.Fatalf("parse: %q %q %v", f, got, ok)
	}
	if strings.Contains(tk, "Ann") || !ticket.IsTicket(tk) {
		t.Fatalf("ticket %q", tk)
	}
	mac := tk[strings.LastIndexByte(tk, '.')+1:]
	for name, bad := range map[string]string{
		"empty":             "",
		"another entry":     "FT1.fair.0193a3c2-7a4e-7000-8000-000000000002." + mac,
		"another form":      "FT1.gala." + id + "." + mac,
		"another secret":    ticket.Ticket(other, "fair", id),
		"the link":          entrylink.Token(h, "fair", id),
		"the link, dressed": "FT1." + entrylink.Token(h, "fair", id),
		"a flipped mac bit": tk[:len(tk)-1] + string(rune(tk[len(tk)-1])^1),
		"the short code":    ticket.Code(h, "fair", id),
	} {
		if _, _, ok := ticket.Parse(h, bad); ok {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
}

func TestShortCode(t *testing.T) {
	t.Parallel()
	h := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	c := ticket.Code(h, "fair", id)
	if len(c) != 11 || c[5] != '-' || strings.ContainsAny(c, "ILOU") {
		t.Fatalf("code %q", c)
	}
	if c == ticket.Code(h, "gala", id) {
		t.Fatal("the same code on two forms")
	}
	typed := strings.ToLower(strings.ReplaceAll(c, "-", " "))
	if ticket.NormalizeCode(typed) != c {
		t.Fatalf("typed %q normalizes to %q, want %q", typed, ticket.NormalizeCode(typed), c)
	}
	for _, bad := range []string{"", "ABCDE", "ABCDE-FGHJKM", "ABCDE-FGHJ*"} {
		if ticket.NormalizeCode(bad) != "" {
			t.Errorf("%q taken as a code", bad)
		}
	}
	if ticket.NormalizeCode("oooo0-iiii1") != "00000-11111" {
		t.Error("look-alikes are not folded")
	}
	ids := []string{"a", id, "c"}
	if got, ok := ticket.Match(h, "fair", typed, ids); !ok || got != id {
		t.Fatalf("match: %q %v", got, ok)
	}
	if _, ok := ticket.Match(h, "fair", typed, []string{id, id}); ok {
		t.Fatal("a code two entries have matched one")
	}
	if _, ok := ticket.Match(h, "gala", typed, ids); ok {
		t.Fatal("a code matched on another form")
	}
}

// TestQRCodeScans decodes the PNG with an independent decoder (ZXing's
// Go port): the image carries the ticket, whole.
func TestQRCodeScans(t *testing.T) {
	t.Parallel()
	h := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	tk := ticket.Ticket(h, "summer-fair-2026", id)
	b, err := ticket.PNG(tk, 4)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if res.GetText() != tk {
		t.Fatalf("decoded %q, want %q", res.GetText(), tk)
	}
	svg, err := ticket.SVG(tk, `Ticket "A"`)
	if err != nil || !bytes.Contains(svg, []byte(`aria-label="Ticket &#34;A&#34;"`)) || !bytes.Contains(svg, []byte("<path")) {
		t.Fatalf("svg: %v %s", err, svg[:min(len(svg), 300)])
	}
}
