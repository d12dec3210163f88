package intake

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
)

// FuzzDecodeBody feeds untrusted bodies of every accepted type to the
// decoder: it must never panic, and every refusal must be a 400, 413 or 415
// problem, or a 422 naming the fields that are not UTF-8.
func FuzzDecodeBody(f *testing.F) {
	f.Add("application/json", []byte(`{"name":"Ann","tickets":2,"extras":["a","b"],"ok":true,"_key":"k","_ts":"1700000000000"}`))
	f.Add("application/json", []byte(`{"a":`))
	f.Add("application/x-www-form-urlencoded", []byte("name=Ann&phone=%2B86+138&x=1&x=2&_key=k"))
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAnn\r\n--XX--\r\n"))
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\n\r\nx\r\n--XX--\r\n"))
	f.Add("text/plain", []byte("hello"))
	f.Fuzz(func(t *testing.T, ctype string, raw []byte) {
		r, err := http.NewRequest("POST", "/v1/forms/f/submissions", bytes.NewReader(raw))
		if err != nil {
			return
		}
		r.Header.Set("Content-Type", ctype)
		b, err := decodeBody(r, 1024)
		if err != nil {
			// Text that is not UTF-8 is refused field by field, as
			// validation is (422); anything else is a 400, 413 or 415.
			var ve *form.ValidationError
			p := problem.From(err)
			switch {
			case p.Status == 422 && errors.As(err, &ve):
			case p.Status == 400 || p.Status == 413 || p.Status == 415:
			default:
				t.Fatalf("refused with %d %s (%T: %v)", p.Status, p.Code, err, err)
			}
			return
		}
		if b.values == nil {
			t.Fatal("no error and no values")
		}
		if _, ok := b.values["_key"]; ok {
			t.Fatal("_key left among the values")
		}
		if len(raw) > 1024 {
			t.Fatalf("a body of %d bytes was accepted with a limit of 1024", len(raw))
		}
	})
}

// FuzzParseKey: a parsed key is always 1-255 visible ASCII characters, and
// a bare key of visible ASCII is taken as it is.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"abc", `"quoted \" key"`, `"a\\b"`, `"unterminated`, " padded ", strings.Repeat("k", 255), strings.Repeat("k", 256), "", `""`, "ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseKey(s)
		if err != nil {
			return
		}
		if !validKey(k) {
			t.Fatalf("parseKey(%q) = %q, which is not a valid key", s, k)
		}
		trimmed := strings.Trim(s, " \t")
		if !strings.HasPrefix(trimmed, `"`) && k != trimmed {
			t.Fatalf("bare key %q parsed as %q", s, k)
		}
	})
}
