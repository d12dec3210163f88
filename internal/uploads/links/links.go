// Package links signs and checks the short-lived links through which
// owners download an entry's files, and names those files safely: the
// uploads service serves a link only when Check passes.
package links

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/formd/formd/internal/store"
)

// Signer signs and checks the short-lived links through which owners
// download an entry's files: GET /v1/files/{entry}/{upload}?exp=…&sig=…,
// where sig is the HMAC-SHA-256 of the entry, the upload and the expiry
// under a key derived from the installation's secret. Whoever has the
// link may download the file until it expires, and nothing else.
type Signer struct {
	key  []byte
	base string
	ttl  time.Duration
	now  func() time.Time
}

// New makes the signer. base is the public URL links start with
// ("" for links relative to the server); ttl is --link-ttl.
func New(secret []byte, base string, ttl time.Duration, now func() time.Time) *Signer {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("formd/file-links/v1"))
	if now == nil {
		now = time.Now
	}
	return &Signer{key: mac.Sum(nil), base: strings.TrimSuffix(base, "/"), ttl: ttl, now: now}
}

// With is the signer with another base (when base is not "") and TTL
// (when ttl is not 0): an export for people chooses how long its links
// work, and needs them absolute.
func (l *Signer) With(base string, ttl time.Duration) *Signer {
	c := *l
	if base != "" {
		c.base = strings.TrimSuffix(base, "/")
	}
	if ttl > 0 {
		c.ttl = ttl
	}
	return &c
}

func (l *Signer) sign(entry, upload string, exp int64) string {
	mac := hmac.New(sha256.New, l.key)
	fmt.Fprintf(mac, "%d:%s\n%d:%s\n%d\n", len(entry), entry, len(upload), upload, exp)
	return hex.EncodeToString(mac.Sum(nil))
}

// URL is a link to an entry's file that works for the TTL.
func (l *Signer) URL(entry, upload string) string {
	exp := l.now().Add(l.ttl).Unix()
	return l.base + "/v1/files/" + url.PathEscape(entry) + "/" + url.PathEscape(upload) +
		"?exp=" + strconv.FormatInt(exp, 10) + "&sig=" + l.sign(entry, upload, exp)
}

// expiry is when a link made now stops working (URL rounds it to the
// second).
func (l *Signer) expiry() time.Time { return time.Unix(l.now().Add(l.ttl).Unix(), 0) }

// ErrInvalid is a link that is wrong or expired; the answer does not say
// which.
var ErrInvalid = errors.New("file link not valid")

// Check verifies a link's signature and expiry: nil, or ErrInvalid.
func (l *Signer) Check(entry, upload, exp, sig string) error {
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrInvalid
	}
	want := l.sign(entry, upload, e)
	if !hmac.Equal([]byte(want), []byte(sig)) || l.now().Unix() >= e {
		return ErrInvalid
	}
	return nil
}

// File is one file of an entry as exports and webhooks carry it.
type File struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url"`
	// Expires is when URL stops working (not in exports and webhook
	// bodies, whose contract is the five members above).
	Expires time.Time `json:"-"`
}

// EntryStore reads the uploads an entry claimed.
type EntryStore interface {
	EntryUploads(ctx context.Context, entryID string) ([]store.Upload, error)
}

// Files lists an entry's files with a fresh signed link each, by field.
func (l *Signer) Files(ctx context.Context, st EntryStore, entryID string) (map[string][]File, error) {
	ups, err := st.EntryUploads(ctx, entryID)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]File, len(ups))
	for _, u := range ups {
		if u.Erased {
			continue // its entry's data is erased: the file is not served
		}
		out[u.Field] = append(out[u.Field], File{Name: CleanName(u.Name), Type: u.Type, Size: u.Size,
			SHA256: hex.EncodeToString(u.SHA256[:]), URL: l.URL(entryID, u.ID), Expires: l.expiry()})
	}
	return out, nil
}

// ContentDisposition is an attachment header for a file name as a
// stranger gave it (RFC 6266): an ASCII fallback with anything risky
// replaced, and the name itself percent-encoded in filename*.
func ContentDisposition(name string) string {
	name = stripFormat(name)
	if name == "" || !utf8.ValidString(name) {
		name = "file"
	}
	var ascii strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || r > 0x7e || r == '"' || r == '\\' || r == '/' || r == ';' || r == '%':
			ascii.WriteByte('_')
		default:
			ascii.WriteRune(r)
		}
	}
	var enc strings.Builder
	for _, c := range []byte(name) {
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0) {
			enc.WriteByte(c)
		} else {
			fmt.Fprintf(&enc, "%%%02X", c)
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + enc.String()
}

// CleanName is a file name as it is shown and sent: without control
// characters, nor the invisible format characters (Unicode Cf: bidi
// controls, zero-width spaces, BOMs) that make "evil\u202egpj.exe" show as
// "evilexe.jpg".
func CleanName(n string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, stripFormat(n))
}

// stripFormat removes the invisible format characters (Unicode Cf).
func stripFormat(n string) string {
	return strings.Map(func(r rune) rune {
		if r >= 0x80 && unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, n)
}
