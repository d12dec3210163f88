package console_test

import (
	"bytes"
	"html"
	"image"
	"image/png"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

// What a Chinese page must not show a person (issue 34): a command-line
// flag, an internal id or reference, a MIME type, an ISO 8601 timestamp.
var zhJargon = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a command-line flag", regexp.MustCompile(`(^|[\s（(：:，,])--[a-z][a-z-]+`)},
	{"an internal event id", regexp.MustCompile(`\bevt_[0-9A-Za-z]`)},
	{"an internal upload reference", regexp.MustCompile(`upload:[0-9a-f]{6}`)},
	{"a MIME type", regexp.MustCompile(`\b(image|application|text|audio|video)/[a-z0-9][a-z0-9.+-]*`)},
	{"an ISO timestamp", regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d`)},
	{"a command to run", regexp.MustCompile(`formd [a-z]+`)},
	{"a region code", regexp.MustCompile(`[（(]如 ?[A-Z]{2}[)）]|\b(CN|HK|TW|US)\b`)},
}

var (
	scriptRe = regexp.MustCompile(`(?s)<(script|style|textarea)\b.*?</(script|style|textarea)>`)
	tagRe    = regexp.MustCompile(`(?s)<[^>]*>`)
)

// visibleText is what a page shows: its text without tags, scripts and
// the definition editor's YAML.
func visibleText(page string) string {
	return html.UnescapeString(tagRe.ReplaceAllString(scriptRe.ReplaceAllString(page, " "), " "))
}

// TestChinesePagesShowNoEngineersWords renders the console's pages in zh
// with an entry that has a photo, an audit log with a setup link, and
// fails on a flag, an internal id, a MIME type or an ISO timestamp in
// what a person reads (the term.* tooltips are titles, not text).
func TestChinesePagesShowNoEngineersWords(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, fileForms, servertest.Options{})
	var img bytes.Buffer
	png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 8, 8)))
	id := submitFiles(t, h, "k-zh", "李雷", formFile{"photo", "证件照.png", img.Bytes()})

	b := signIn(t, h, "owner@example.org", accounts.Owner, "*")
	b.do("GET", "/admin/forms?lang=zh", nil)
	// An account added with a setup link: the audit log has its expiry.
	b.do("GET", "/admin/accounts", nil)
	b.do("POST", "/admin/accounts", url.Values{"email": {"viewer@example.org"}, "name": {"王芳"}, "role": {"viewer"}, "sites": {"a"}})
	for _, path := range []string{
		"/admin/forms",
		"/admin/forms/exam",
		"/admin/forms/exam/submissions",
		"/admin/forms/exam/entries/" + id,
		"/admin/forms/exam/proof",
		"/admin/replay",
		"/admin/forget",
		"/admin/accounts",
		"/admin/audit",
	} {
		code, page := b.do("GET", path, nil)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
			continue
		}
		if !strings.Contains(page, `lang="zh`) {
			t.Errorf("GET %s is not in Chinese", path)
		}
		text := visibleText(page)
		for _, j := range zhJargon {
			if m := j.re.FindString(text); m != "" {
				i := strings.Index(text, m)
				t.Errorf("GET %s shows %s: %q in …%s…", path, j.what, m, strings.Join(strings.Fields(text[max(0, i-80):min(len(text), i+80)]), " "))
			}
		}
	}
	// The forget page offers regions by name.
	if _, page := b.do("GET", "/admin/forget", nil); !strings.Contains(page, `<option value="CN">中国大陆</option>`) {
		t.Error("the forget page does not offer 中国大陆 by name")
	}
}
