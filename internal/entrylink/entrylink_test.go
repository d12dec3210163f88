package entrylink_test

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/entrylink"
	"github.com/formd/formd/internal/form"
)

func TestTokenRoundTripAndForgeries(t *testing.T) {
	t.Parallel()
	h := form.NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	other := form.NewHasher([]byte("another installation's secret!!!"))
	tok := entrylink.Token(h, "fair", "0193a3c2-7a4e-7000-8000-000000000001")
	if tok != entrylink.Token(h, "fair", "0193a3c2-7a4e-7000-8000-000000000001") {
		t.Fatal("the token is not the same for the same entry")
	}
	if f, id, ok := entrylink.Parse(h, tok); !ok || f != "fair" || id != "0193a3c2-7a4e-7000-8000-000000000001" {
		t.Fatalf("parse: %q %q %v", f, id, ok)
	}
	dotted := entrylink.Token(h, "f", "a.b.c")
	if f, id, ok := entrylink.Parse(h, dotted); !ok || f != "f" || id != "a.b.c" {
		t.Fatalf("an id with dots: %q %q %v", f, id, ok)
	}
	mac := tok[strings.LastIndexByte(tok, '.')+1:]
	for name, bad := range map[string]string{
		"empty":          "",
		"no mac":         "fair.0193a3c2-7a4e-7000-8000-000000000001",
		"another entry":  "fair.0193a3c2-7a4e-7000-8000-000000000002." + mac,
		"another form":   "fai.0193a3c2-7a4e-7000-8000-000000000001." + mac,
		"a cut mac":      tok[:len(tok)-1],
		"not base64":     "fair.x.!!!",
		"another secret": entrylink.Token(other, "fair", "0193a3c2-7a4e-7000-8000-000000000001"),
		"only dots":      "..",
		"no form":        ".id." + mac,
	} {
		if _, _, ok := entrylink.Parse(h, bad); ok {
			t.Errorf("%s: %q parsed", name, bad)
		}
	}
}
