package console_test

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/server/servertest"
)

const fileForms = `
id: exam
site: a
fields:
  - {name: name, type: text}
  - {name: photo, type: file, label: {en: Photo, zh: 照片}, accept: [image/png]}
  - {name: cv, type: file, label: {en: CV, zh: 简历}, accept: [application/pdf]}
`

// formFile is one file of a submission sent as a multipart form.
type formFile struct {
	field, name string
	data        []byte
}

// submitFiles submits a name and files to the exam form (fileForms) under
// key, as a plain HTML form with files sends them, wants it stored, and
// returns the entry's id.
func submitFiles(t *testing.T, h *servertest.Harness, key, name string, files ...formFile) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("_key", key)
	mw.WriteField("name", name)
	for _, f := range files {
		fw, _ := mw.CreateFormFile(f.field, f.name)
		fw.Write(f.data)
	}
	mw.Close()
	return submitEncoded(t, h, "exam", mw.FormDataContentType(), &body)
}

// The entry page shows a photo as a thumbnail and every file as a
// download, both through signed links that serve the stored bytes, and
// names the files in the entry's data, in English and Chinese.
func TestEntryPageFiles(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, fileForms, servertest.Options{})
	var img bytes.Buffer
	pic := image.NewRGBA(image.Rect(0, 0, 8, 8))
	pic.Set(1, 1, color.RGBA{200, 10, 10, 255})
	png.Encode(&img, pic)
	pdf := []byte("%PDF-1.4\n% a CV\n")

	id := submitFiles(t, h, "k-files", "Li Lei", formFile{"photo", "证件照.png", img.Bytes()}, formFile{"cv", "cv.pdf", pdf})

	b := signIn(t, h, "owner@example.org", accounts.Owner, "a")
	for _, tc := range []struct{ lang, title, download, thumb string }{
		{"en", ">Files<", `aria-label="Download 证件照.png"`, `alt="Photo 证件照.png, sent for Photo"`},
		{"zh", ">文件<", `aria-label="下载 证件照.png"`, `alt="照片 证件照.png（照片）"`},
	} {
		code, page := b.do("GET", "/admin/forms/exam/entries/"+id+"?lang="+tc.lang, nil)
		if code != 200 {
			t.Fatalf("%s entry page: %d", tc.lang, code)
		}
		for _, want := range []string{tc.title, tc.download, tc.thumb, `aria-label="` + map[string]string{"en": "Download", "zh": "下载"}[tc.lang] + ` cv.pdf"`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s entry page lacks %s", tc.lang, want)
			}
		}
		if strings.Contains(page, "upload:") || strings.Contains(page, "_uploads") {
			t.Errorf("%s entry page shows the internal upload reference", tc.lang)
		}
		// One thumbnail: the PDF is a download only.
		if n := strings.Count(page, `class="thumb"`); n != 1 {
			t.Errorf("%s entry page has %d thumbnails, want 1", tc.lang, n)
		}
		src := regexp.MustCompile(`<img class="thumb" src="([^"]+)"`).FindStringSubmatch(page)
		if src == nil {
			t.Fatalf("no thumbnail in:\n%s", page)
		}
		res, err := http.Get(h.URL + strings.ReplaceAll(src[1], "&amp;", "&"))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		// The server's own thumbnail, never the original (issue 30: a
		// bomb's pixels were handed to the browser).
		if res.StatusCode != 200 || bytes.Equal(got, img.Bytes()) || res.Header.Get("Content-Type") != "image/jpeg" {
			t.Fatalf("the thumbnail's link: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		thumb, err := jpeg.Decode(bytes.NewReader(got))
		if err != nil || thumb.Bounds().Dx() != 8 || thumb.Bounds().Dy() != 8 {
			t.Fatalf("the thumbnail: %v %v", thumb, err)
		}
	}
}
