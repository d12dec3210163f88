package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestVendoredJSQRMatchesItsHashList checks the door page's vendored QR
// decoder against static/jsqr.js.sha256: the served files hash as
// listed, and jsqr.js below its header comment is npm's dist/jsQR.js
// byte for byte (so an edit to it, or a new version without a new list,
// fails here).
func TestVendoredJSQRMatchesItsHashList(t *testing.T) {
	list, err := staticFS.ReadFile("static/jsqr.js.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(list), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("hash list line %q is not 'SUM  NAME'", line)
		}
		want[name] = sum
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	for _, name := range []string{"jsqr.js", "jsqr.LICENSE"} {
		b, err := staticFS.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum(b); got != want[name] {
			t.Errorf("%s: sha256 %s, the list says %q", name, got, want[name])
		}
	}
	js, _ := staticFS.ReadFile("static/jsqr.js")
	if !bytes.HasPrefix(js, []byte("/* Vendored: jsqr 1.4.0")) {
		t.Fatal("jsqr.js does not start with its vendoring comment")
	}
	_, upstream, ok := bytes.Cut(js, []byte(" */\n"))
	if !ok {
		t.Fatal("jsqr.js: no end to the header comment")
	}
	if got := sum(upstream); got != want["dist/jsQR.js"] {
		t.Errorf("jsqr.js below its header: sha256 %s, upstream dist/jsQR.js is %q", got, want["dist/jsQR.js"])
	}
}
